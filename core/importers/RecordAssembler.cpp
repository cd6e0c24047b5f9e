#include "core/importers/RecordAssembler.h"

#include "core/importers/TextPieces.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <climits>
#include <cmath>
#include <functional>
#include <map>

namespace nanscope {

namespace {

constexpr size_t kMostNames = 100000; // distinct names kept; more is not a log
constexpr size_t kMostListedNames = 8;
constexpr size_t kMostTablePairs = 4096;
constexpr size_t kMostSpacedColumns = 64;
constexpr uint64_t kLeastManyValuedRecords = 5;
constexpr size_t kLeastPointsToForesee = 4096;
constexpr uint32_t kMostStepNamesARecord = 8;

// "-------------", "+-----+-----+", "=====": a table's rule.
bool isRule(std::string_view text)
{
    size_t dashes = 0;
    for (char c : text) {
        if (c == '-' || c == '=')
            ++dashes;
        else if (c != '+' && c != '|' && c != ' ' && c != '\t')
            return false;
    }
    return dashes >= 3;
}

// Bit for bit, so that NaN equals NaN.
bool sameValue(double a, double b)
{
    return a == b || (std::isnan(a) && std::isnan(b));
}

} // namespace

void RecordAssembler::expectBytesOf(const std::string& path)
{
    std::error_code ec;
    if (const uint64_t size = std::filesystem::file_size(path, ec); !ec)
        m_expectedBytes = size;
}

void RecordAssembler::piece(std::string_view text)
{
    ++m_pieces;
    m_bytes += text.size() + 1;
    const std::string_view content = trimmed(text);
    if (isRule(content)) {
        flushTable();
        return;
    }
    if (!content.empty() && content.front() == '|') {
        textrecord::parseSegment(text, m_segment);
        if (m_segment.binary) {
            ++m_binaryPieces;
            return;
        }
        if (m_segment.pairs.empty()) {
            // "| rollout/           |          |": the group of the rows below it.
            std::string_view inner = content.substr(1);
            if (!inner.empty() && inner.back() == '|')
                inner.remove_suffix(1);
            inner = trimmed(inner);
            const size_t bar = inner.find('|');
            const std::string_view word = trimmed(inner.substr(0, bar));
            if (!word.empty() && word.back() == '/' && word.find(' ') == std::string_view::npos &&
                (bar == std::string_view::npos || trimmed(inner.substr(bar + 1)).empty()))
                m_tableGroup = std::string(word);
            return;
        }
        for (const textrecord::Pair& pair : m_segment.pairs) {
            if (m_tableNames.size() >= kMostTablePairs)
                break;
            const bool grouped = !m_tableGroup.empty() && text.find('|') < text.find(pair.name.front()) &&
                                 (text.substr(text.find('|') + 1, 1) == " " || text.substr(text.find('|') + 1, 1) == "\t");
            m_tableNames.push_back(grouped ? m_tableGroup + std::string(pair.name) : std::string(pair.name));
            m_table.pairs.push_back(textrecord::Pair{{}, pair.value, pair.absent});
        }
        return;
    }
    flushTable();
    textrecord::parseSegment(text, m_segment);
    if (m_segment.binary) {
        ++m_binaryPieces;
        return;
    }
    if (m_segment.pairs.empty() && m_segment.barCount < 0 && spacedTableRow(content))
        return;
    take(m_segment);
}

bool RecordAssembler::spacedTableRow(std::string_view content)
{
    // A table printed with spaces (fastai's "epoch  train_loss  valid_loss  accuracy  time", then
    // "0      0.810057    0.461940    0.896825  04:39"): the header's words name the row's numbers.
    std::vector<std::string_view> cells;
    size_t at = 0;
    while (at < content.size() && cells.size() <= kMostSpacedColumns) {
        const size_t end = content.find_first_of(" \t", at);
        cells.push_back(content.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
        if (end == std::string_view::npos)
            break;
        at = content.find_first_not_of(" \t", end);
    }
    if (cells.size() < 2 || cells.size() > kMostSpacedColumns)
        return false;
    auto isWord = [](std::string_view cell) {
        const char c = cell.front();
        return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') &&
               cell.find_first_of(":=,;") == std::string_view::npos;
    };
    if (std::all_of(cells.begin(), cells.end(), isWord)) {
        m_spacedHeader.assign(cells.begin(), cells.end());
        return false;
    }
    if (cells.size() != m_spacedHeader.size())
        return false;
    m_table.pairs.clear();
    for (size_t i = 0; i < cells.size(); ++i) {
        double value = 0;
        const std::string_view cell = cells[i];
        const char* end = cell.data() + cell.size();
        const auto parsed = std::from_chars(cell.data() + (cell.front() == '+'), end, value);
        if (parsed.ec == std::errc() && parsed.ptr == end) {
            m_table.pairs.push_back(textrecord::Pair{m_spacedHeader[i], value, false});
            continue;
        }
        // A clock ("04:39") is a column of the row, not a value; anything else: no row of this table.
        if (cell.find_first_not_of("0123456789:.") != std::string_view::npos || cell.find(':') == std::string_view::npos)
            return false;
    }
    if (m_table.pairs.size() < 2)
        return false;
    m_table.indented = false;
    m_table.barCount = m_table.barTotal = -1;
    take(m_table);
    m_table.pairs.clear();
    return true;
}

void RecordAssembler::flushTable()
{
    m_tableGroup.clear();
    if (m_table.pairs.empty())
        return;
    for (size_t i = 0; i < m_table.pairs.size(); ++i)
        m_table.pairs[i].name = m_tableNames[i];
    m_table.indented = false;
    m_table.barCount = m_table.barTotal = -1;
    take(m_table);
    m_table.pairs.clear();
    m_tableNames.clear();
}

void RecordAssembler::take(const textrecord::Segment& record, double wallTime)
{
    const auto& pairs = record.pairs;
    if (pairs.empty() && record.barCount < 0) {
        if (!record.indented)
            m_continues.reset(); // other text ends a record
        return;
    }
    m_pairSlots.clear();
    size_t named = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        size_t slot = slotOf(i, pairs[i].name);
        if (slot != SIZE_MAX && m_slots[slot].notAValue)
            slot = SIZE_MAX;
        named += slot != SIZE_MAX;
        m_pairSlots.push_back(slot);
    }
    if (named == 0 && record.barCount < 0) {
        if (!record.indented)
            m_continues.reset();
        return;
    }
    Record placed;
    placed.firstCandidate = uint32_t(m_candidates.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
        const textrecord::Pair& p = pairs[i];
        if (p.absent || m_pairSlots[i] == SIZE_MAX)
            continue;
        const Slot& slot = m_slots[m_pairSlots[i]];
        if (slot.epoch && std::isnan(placed.epoch) && std::isfinite(p.value))
            placed.epoch = p.value;
        int64_t raw = 0;
        // A few step names a record at most: a line of thousands of "step=1" is not thousands of steps.
        if (slot.stepRank < 0 || placed.candidates >= kMostStepNamesARecord || !records::asStep(p.value, raw))
            continue;
        m_candidates.emplace_back(uint32_t(m_pairSlots[i]), raw);
        ++placed.candidates;
    }
    // An epoch printed on a line of its own (Keras' "Epoch 3/10") holds for the records after it.
    if (std::isnan(placed.epoch))
        placed.epoch = m_epochContext;
    else
        m_epochContext = placed.epoch;
    placed.barCount = record.barCount;
    placed.barTotal = record.barTotal;
    placed.ownValues = uint8_t(std::min<size_t>(named, 2));
    const bool placesItself = placed.candidates > 0 || placed.barCount >= 0;
    // An indented piece of one value with no step of its own continues the record above it
    // (Composer's one metric a line); an indented piece of many is a record of its own (a dict
    // printed after a progress bar's spaces).
    if (!placesItself && record.indented && named == 1 && m_continues) {
        ++m_continued;
        m_lastWasBareBar = false;
        for (size_t i = 0; i < pairs.size(); ++i)
            if (m_pairSlots[i] != SIZE_MAX)
                add(m_pairSlots[i], pairs[i], *m_continues, wallTime);
        return;
    }
    // A progress bar redrawn with nothing else: only its last drawing before a record matters.
    const bool bareBar = named == 0;
    if (bareBar && m_lastWasBareBar && m_records.back().barTotal == placed.barTotal) {
        m_records.back() = placed;
        return;
    }
    m_lastWasBareBar = bareBar;
    const int64_t index = int64_t(m_records.size());
    m_records.push_back(placed);
    m_continues = index;
    for (size_t i = 0; i < pairs.size(); ++i)
        if (m_pairSlots[i] != SIZE_MAX)
            add(m_pairSlots[i], pairs[i], index, wallTime);
}

size_t RecordAssembler::slotOf(size_t position, std::string_view name)
{
    if (position < m_slotAt.size() && m_slotAt[position] < m_slots.size() && m_slots[m_slotAt[position]].name == name)
        return m_slotAt[position];
    size_t slot = SIZE_MAX;
    auto it = m_index.find(name);
    if (it != m_index.end()) {
        slot = it->second;
    } else {
        if (m_slots.size() >= kMostNames) {
            ++m_droppedNames;
            return SIZE_MAX;
        }
        slot = m_slots.size();
        Slot created{std::string(name), {}, 0, records::stepKeyRank(name), records::isEpochKey(name),
                     textrecord::isNotAValueName(name)};
        m_slots.push_back(std::move(created));
        m_index.emplace(m_slots.back().name, slot);
    }
    if (position < textrecord::kMostPairs) {
        if (m_slotAt.size() <= position)
            m_slotAt.resize(position + 1, SIZE_MAX);
        m_slotAt[position] = slot;
    }
    return slot;
}

void RecordAssembler::add(size_t slot, const textrecord::Pair& pair, int64_t record, double wallTime)
{
    Slot& s = m_slots[slot];
    ++s.records;
    if (pair.absent)
        return;
    if (!s.points.empty() && s.points.back().step == record) {
        s.points.back() = ScalarPoint{record, pair.value, wallTime};
        return;
    }
    // A long series grows once to what the rest of the file will likely hold, at the rate it has
    // held values so far, instead of doubling: each doubling is a fresh block whose pages fault in
    // (a quarter of a large log's reading time went to page faults).
    if (s.points.size() == s.points.capacity() && s.points.size() >= kLeastPointsToForesee && m_expectedBytes > m_bytes &&
        m_bytes > 0) {
        const double share = double(m_bytes) / double(m_expectedBytes);
        const size_t foreseen = size_t(double(s.points.size()) / share * 1.05) + kLeastPointsToForesee;
        if (foreseen > s.points.capacity() * 3 / 2)
            s.points.reserve(foreseen);
    }
    s.points.push_back(ScalarPoint{record, pair.value, wallTime});
}

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
