// How RecordAssembler's collected records become series: which step each record is (its own
// step key, or its place among the records), which names are kept as series, and the move of their
// values into the ScalarLog. The collecting half is RecordAssembler.cpp.
#include "core/importers/RecordAssembler.h"

#include "core/importers/ScalarNames.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

namespace nanscope {

namespace {

constexpr size_t kMostListedNames = 8;
constexpr uint64_t kLeastManyValuedRecords = 5;

// Bit for bit, so that NaN equals NaN.
bool sameValue(double a, double b)
{
    return a == b || (std::isnan(a) && std::isnan(b));
}

} // namespace

std::vector<int64_t> RecordAssembler::ownSteps(const std::vector<bool>& holdsSeries)
{
    const size_t n = m_records.size();
    std::vector<int64_t> own(n, kNoStep);
    // The step name: the one most records that hold series carry, the more telling on a tie
    // (a banner's "step" printed once does not decide it).
    // Counted by slot (a vector, not a map: a vote a record, millions of records).
    std::vector<uint64_t> votes(m_slots.size(), 0);
    for (size_t r = 0; r < n; ++r)
        if (holdsSeries[r])
            for (uint32_t c = 0; c < m_records[r].candidates; ++c)
                ++votes[m_candidates[m_records[r].firstCandidate + c].first];
    int chosen = -1;
    for (size_t id = 0; id < votes.size(); ++id) {
        const uint64_t count = votes[id];
        if (count == 0)
            continue;
        if (chosen < 0 || count > votes[size_t(chosen)] ||
            (count == votes[size_t(chosen)] && m_slots[id].stepRank < m_slots[size_t(chosen)].stepRank))
            chosen = int(id);
    }
    records::StepSequence sequence;
    if (chosen >= 0) {
        m_stepKey = m_slots[size_t(chosen)].name;
        for (size_t r = 0; r < n; ++r)
            for (uint32_t c = 0; c < m_records[r].candidates; ++c) {
                const auto& [id, raw] = m_candidates[m_records[r].firstCandidate + c];
                if (int(id) == chosen) {
                    own[r] = sequence.place(raw, m_records[r].epoch);
                    break;
                }
            }
    } else {
        // The main progress bar: the one with the largest total (an evaluation's shorter bar runs
        // in between).
        int64_t mainTotal = -1;
        for (const Record& record : m_records)
            mainTotal = std::max(mainTotal, record.barTotal);
        if (mainTotal >= 0) {
            for (size_t r = 0; r < n; ++r)
                if (m_records[r].barCount >= 0 && m_records[r].barTotal == mainTotal)
                    own[r] = sequence.place(m_records[r].barCount, m_records[r].epoch);
        } else {
            // A record per epoch (a table's rows, "Epoch [001/300] - Train Loss: ..."): the epoch is
            // the step when every record that holds a value has a whole epoch and they never go
            // back (a Trainer's epoch 1.0 then 1.02 is a fraction; three trainings in one log
            // start again).
            bool whole = false;
            int64_t previous = -1, epoch = 0;
            for (size_t r = 0; r < n; ++r) {
                if (!holdsSeries[r])
                    continue;
                whole = records::asStep(m_records[r].epoch, epoch) && epoch >= previous;
                if (!whole)
                    break;
                previous = epoch;
            }
            if (whole) {
                m_epochIsStep = true;
                for (size_t r = 0; r < n; ++r)
                    if (holdsSeries[r] && records::asStep(m_records[r].epoch, epoch))
                        own[r] = sequence.place(epoch);
            }
        }
    }
    m_epochRestarts = sequence.epochRestarts();
    m_goesBack = sequence.goesBack();
    return own;
}

std::vector<int64_t> RecordAssembler::placeRecords(const std::vector<bool>& holdsSeries,
                                                   const std::vector<Slot*>& kept)
{
    const size_t n = m_records.size();
    const std::vector<int64_t> own = ownSteps(holdsSeries);

    // Records with no step of their own are placed at the step logged before them when that tells
    // them apart: a progress bar redrawn between a Trainer's dicts does; the last frame of a bar
    // that a log kept once before all of them (W&B's output.log) does not.
    std::vector<int64_t> context(n, kNoStep);
    bool anyOwnStep = false, placedByContext = false;
    int64_t last = kNoStep;
    for (size_t r = 0; r < n; ++r) {
        if (own[r] != kNoStep)
            last = own[r];
        context[r] = last;
        anyOwnStep = anyOwnStep || (holdsSeries[r] && own[r] != kNoStep);
        placedByContext = placedByContext || (own[r] == kNoStep && last != kNoStep);
    }
    // Told apart when (nearly) no series gets two values at one such step (nothing to count when
    // every record logs its own step).
    uint64_t withContext = 0, collisions = 0;
    for (const Slot* slot : placedByContext ? kept : std::vector<Slot*>{}) {
        int64_t previous = kNoStep;
        double previousValue = 0;
        for (const ScalarPoint& p : slot->points) {
            const size_t r = size_t(p.step);
            if (own[r] != kNoStep || context[r] == kNoStep)
                continue;
            ++withContext;
            // The same value again (a summary block repeating the dict beside it) is no collision.
            collisions += context[r] == previous && !sameValue(p.value, previousValue);
            previous = context[r];
            previousValue = p.value;
        }
    }
    const bool useContext = anyOwnStep || (withContext > 0 && collisions * 10 <= withContext);
    std::vector<int64_t> steps(n, kNoStep);
    m_stepLogged = useContext;
    if (useContext && anyOwnStep && collisions > 0) {
        // A log that lost most of its progress bar's redraws (pasted from a terminal) still has a
        // step here and there: a record whose names already have a value at the step it would
        // take is the next step, up to the next step logged.
        std::vector<std::vector<uint32_t>> namesOf(n);
        for (size_t k = 0; k < kept.size(); ++k)
            for (const ScalarPoint& p : kept[k]->points)
                namesOf[size_t(p.step)].push_back(uint32_t(k));
        std::vector<int64_t> nextOwn(n, kNoStep);
        for (size_t r = n; r-- > 0;)
            nextOwn[r] = r + 1 < n ? (own[r + 1] != kNoStep ? own[r + 1] : nextOwn[r + 1]) : kNoStep;
        int64_t current = kNoStep;
        std::vector<uint32_t> used;
        for (size_t r = 0; r < n; ++r) {
            if (own[r] != kNoStep) {
                current = steps[r] = own[r];
                used = namesOf[r];
                continue;
            }
            if (current == kNoStep)
                continue;
            const bool clash = std::any_of(namesOf[r].begin(), namesOf[r].end(), [&](uint32_t k) {
                return std::find(used.begin(), used.end(), k) != used.end();
            });
            if (clash && (nextOwn[r] == kNoStep || current + 1 < nextOwn[r])) {
                ++current;
                used.clear();
            }
            steps[r] = current;
            used.insert(used.end(), namesOf[r].begin(), namesOf[r].end());
        }
    } else if (useContext) {
        steps = context;
    } else {
        int64_t order = 0;
        for (size_t r = 0; r < n; ++r)
            if (holdsSeries[r])
                steps[r] = order++;
    }
    return steps;
}

std::vector<RecordAssembler::Slot*> RecordAssembler::keptSlots(std::vector<uint8_t>& valuesIn,
                                                                uint64_t& constantsLeftOut)
{
    const uint64_t recordCount = m_records.size();
    const uint64_t least = std::min<uint64_t>(kLeastRecords, recordCount);
    const bool enough = recordCount >= 2;
    std::vector<Slot*> kept;
    for (Slot& slot : m_slots)
        if (enough && slot.records >= least && !slot.points.empty())
            kept.push_back(&slot);
    // A value that never changes is a series only beside one that does (a constant learning rate
    // beside the loss), not alone (a configuration printed at every start). NaN and Inf always
    // tell something.
    // Decided once a slot: a constant series is scanned to its end.
    std::vector<char> constant(m_slots.size(), 0);
    bool anyConstant = false;
    for (const Slot* slot : kept) {
        const double first = slot->points.front().value;
        const bool changes = std::any_of(slot->points.begin(), slot->points.end(), [&](const ScalarPoint& p) {
            return !std::isfinite(p.value) || !sameValue(p.value, first);
        });
        constant[size_t(slot - m_slots.data())] = !changes;
        anyConstant = anyConstant || !changes;
    }
    auto informative = [&](const Slot* slot) { return !constant[size_t(slot - m_slots.data())]; };
    // How many kept series have a value in each record (up to 2): first the changing ones, so
    // that a constant is kept only beside a changing value, then the constants kept.
    valuesIn.assign(recordCount, 0);
    auto count = [&](const Slot* slot) {
        for (const ScalarPoint& p : slot->points)
            valuesIn[size_t(p.step)] = uint8_t(std::min(2, valuesIn[size_t(p.step)] + 1));
    };
    for (const Slot* slot : kept)
        if (informative(slot))
            count(slot);
    if (anyConstant) {
        kept.erase(std::remove_if(kept.begin(), kept.end(),
                                  [&](const Slot* slot) {
                                      if (informative(slot))
                                          return false;
                                      for (const ScalarPoint& p : slot->points)
                                          if (valuesIn[size_t(p.step)] > 0)
                                              return false;
                                      ++constantsLeftOut;
                                      return true;
                                  }),
                   kept.end());
        for (const Slot* slot : kept)
            if (!informative(slot))
                count(slot);
    }
    return kept;
}

size_t RecordAssembler::moveSeries(const std::vector<int64_t>& steps, const std::vector<Slot*>& kept, ScalarLog& log,
                                   std::string& listed, bool& beforeFirstStep)
{
    size_t series = 0;
    // More than three steps? (Counted up to four: a log of millions need not be sorted for it.)
    const size_t distinctSteps = [&] {
        std::vector<int64_t> seen;
        for (int64_t step : steps)
            if (step != kNoStep && std::find(seen.begin(), seen.end(), step) == seen.end() && seen.size() < 4)
                seen.push_back(step);
        return seen.size();
    }();
    for (Slot* slot : kept) {
        if (m_stepLogged && !m_epochIsStep && slot->name == m_stepKey)
            continue; // the step itself
        // Placed in place (no second copy of a long series).
        std::vector<ScalarPoint>& points = slot->points;
        size_t placed = 0;
        for (size_t i = 0; i < points.size(); ++i) {
            ScalarPoint p = points[i];
            p.step = steps[size_t(p.step)];
            if (p.step == kNoStep) {
                beforeFirstStep = true;
                continue;
            }
            // One value a step: a progress bar redrawn at the same count, a line every rank prints.
            if (placed > 0 && points[placed - 1].step == p.step)
                points[placed - 1] = p;
            else
                points[placed++] = p;
        }
        points.resize(placed);
        // One value in a log of many steps is something printed once, not a series.
        if (points.empty() || (points.size() == 1 && distinctSteps > 3)) {
            m_singleValues += !points.empty();
            continue;
        }
        if (series < kMostListedNames)
            listed += (series ? ", " : "") + slot->name;
        ++series;
        log.series[slot->name] = std::move(points);
    }
    if (series > kMostListedNames)
        listed += ", ...";
    return series;
}

size_t RecordAssembler::finish(ScalarLog& log, const std::string& kind, uint64_t tooLong, uint64_t lines)
{
    flushTable();
    if (lines > 0)
        m_pieces = lines;
    const uint64_t recordCount = m_records.size();
    std::vector<uint8_t> valuesIn;
    uint64_t constantsLeftOut = 0;
    std::vector<Slot*> kept = keptSlots(valuesIn, constantsLeftOut);
    std::vector<bool> holdsSeries(recordCount, false);
    uint64_t manyValued = 0;
    for (size_t r = 0; r < recordCount; ++r) {
        holdsSeries[r] = valuesIn[r] > 0;
        // Several values in one piece: lines that continue a record ("Start 180: ..." under a
        // test runner's "Passed 0.40 sec") do not make it one.
        manyValued += valuesIn[r] > 1 && m_records[r].ownValues > 1;
    }
    const std::vector<int64_t> steps = placeRecords(holdsSeries, kept);
    // Training records: a step logged, or records of several values. A text whose numbers come
    // one a line with no step (a package manager's log, a test runner's "Passed 0.40 sec", a
    // cache file's "X:INTERNAL=1") is no log of training.
    m_refusal.clear();
    if (!m_stepLogged && manyValued < kLeastManyValuedRecords && !kept.empty()) {
        m_refusal = "numbers, but no step is logged and fewer than " + std::to_string(kLeastManyValuedRecords) +
                    " records hold two values or more: no training records";
        kept.clear();
    }
    // Numbers in prose and in a document's tables (a README's "2 GB opens at 300 MB/s", its table
    // of benchmarks) make short series under words that are no training quantity; a training log
    // pasted into the same document has a series that runs on, or one named as training names it.
    if (m_freeText && !m_stepLogged && !kept.empty() &&
        std::none_of(kept.begin(), kept.end(), [](const Slot* slot) {
            return slot->points.size() >= kLeastFreeTextSeriesValues ||
                   isKnownScalarName(canonicalScalarName(slot->name));
        })) {
        m_refusal = "numbers in prose or tables, but no step is logged, no series holds " +
                    std::to_string(kLeastFreeTextSeriesValues) +
                    " values and none is a training quantity (loss, grad_norm, lr, ...): no training records";
        kept.clear();
    }

    std::string listed;
    bool beforeFirstStep = false;
    const size_t series = moveSeries(steps, kept, log, listed, beforeFirstStep);
    m_stepFrom = !m_stepLogged        ? std::string("the records' order (no step is logged)")
                 : !m_stepKey.empty() ? "\"" + m_stepKey + "\""
                 : m_epochIsStep      ? std::string("the epoch (a record per epoch)")
                                      : std::string("the progress bar's count");
    log.notes.push_back(kind + ": " + records::countText(recordCount) + " records" +
                        (m_continued ? " (and " + records::countText(m_continued) + " continued lines)" : "") +
                        " in " + records::countText(m_pieces) + " lines; step from " + m_stepFrom + "; " +
                        std::to_string(series) + " series (" + listed + ")");
    if (m_epochRestarts > 0)
        log.notes.push_back("the step starts again at each epoch (" + records::countText(m_epochRestarts) +
                            " times): it is counted on from the previous epoch's last step");
    if (m_goesBack > 0)
        log.notes.push_back("the step goes back " + records::countText(m_goesBack) +
                            " times with no new epoch (several runs in one log, or a resumed run): kept as logged");
    if (m_singleValues > 0)
        log.notes.push_back(std::to_string(m_singleValues) + " names with a single value are not series");
    if (beforeFirstStep)
        log.notes.push_back("records before the first step are not shown");
    if (constantsLeftOut > 0)
        log.notes.push_back(std::to_string(constantsLeftOut) +
                            " names whose value never changes, logged apart from any series (a configuration), "
                            "are not series");
    if (tooLong > 0)
        log.warnings.push_back(log.path + ": " + records::countText(tooLong) +
                               " lines longer than 1 MiB skipped unread");
    if (m_droppedNames > 0)
        log.notes.push_back(records::countText(m_droppedNames) + " values under names past the first " +
                            records::countText(kMostNames) + " not read");
    return series;
}

} // namespace nanscope
