#include "core/compare/RunComparison.h"
#include "core/NumberText.h"

#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace nanscope {

namespace {

// Series that count where training is, not how it goes: two runs differ there by design (another
// batch size, another dataset) and a "divergence" of them says nothing about health.
bool isProgressCounter(const std::string& name)
{
    static const std::set<std::string> counters{runformat::kEpoch, runformat::kWallTime, runformat::scalar::kSkipped, "step", "global_step", "total_flos",
                                                "num_input_tokens_seen", "train_runtime", "eval_runtime",
                                                "eval_samples_per_second", "eval_steps_per_second",
                                                "train_samples_per_second", "train_steps_per_second"};
    return counters.count(name) > 0;
}

} // namespace

Result<std::map<std::string, StepSeries>> readComparableSeries(const RunSource& source)
{
    std::map<std::string, StepSeries> series;
    std::map<std::string, std::string> tableOf; // where each name was read from
    for (const TableInfo& table : source.info().tables) {
        if (!runformat::isSeriesTableName(table.name))
            continue;
        const std::vector<int64_t>& steps = source.steps(table.name);
        if (steps.empty())
            continue;
        for (const std::string& dataset : table.datasets) {
            if (isProgressCounter(dataset))
                continue;
            // /scalars is the training-step table: its series win over a same-named one elsewhere.
            if (auto it = tableOf.find(dataset); it != tableOf.end() && it->second == runformat::kScalars)
                continue;
            auto values = source.readSeries(table.name, dataset);
            if (!values)
                return Error{values.error()};
            StepSeries s;
            const size_t n = std::min(steps.size(), values->size());
            s.steps.assign(steps.begin(), steps.begin() + n);
            s.values.assign(values->begin(), values->begin() + n);
            if (s.empty())
                continue;
            series[dataset] = std::move(s);
            tableOf[dataset] = table.name;
        }
    }
    return series;
}


const SeriesDivergence* RunPairComparison::firstDivergence() const
{
    const SeriesDivergence* first = nullptr;
    for (const SeriesDivergence& s : series)
        if (s.step && (!first || *s.step < *first->step))
            first = &s;
    return first;
}

int64_t incidentMatchTolerance(const ScanReport& reference, const ScanReport& other)
{
    const int64_t span = std::max(reference.lastStep - reference.firstStep, other.lastStep - other.firstStep);
    return std::max<int64_t>(20, span / 20);
}

std::vector<IncidentDifference> compareIncidents(const ScanReport& reference, const ScanReport& other,
                                                 int64_t toleranceSteps)
{
    std::vector<IncidentDifference> result;
    std::vector<bool> otherMatched(other.incidents.size(), false);
    for (const Incident& mine : reference.incidents) {
        // The other run's nearest unmatched incident of the same kind, within the tolerance.
        std::optional<size_t> best;
        for (size_t j = 0; j < other.incidents.size(); ++j) {
            const Incident& theirs = other.incidents[j];
            if (otherMatched[j] || theirs.kind != mine.kind)
                continue;
            const int64_t distance = std::llabs(theirs.onsetStep - mine.onsetStep);
            if (distance > toleranceSteps)
                continue;
            if (!best || distance < std::llabs(other.incidents[*best].onsetStep - mine.onsetStep))
                best = j;
        }
        IncidentDifference d;
        d.kind = mine.kind;
        d.reference = mine;
        if (!best) {
            d.presence = IncidentPresence::OnlyReference;
            result.push_back(std::move(d));
            continue;
        }
        otherMatched[*best] = true;
        const Incident& theirs = other.incidents[*best];
        d.presence = IncidentPresence::Both;
        d.other = theirs;
        d.onsetShift = theirs.onsetStep - mine.onsetStep;
        if (mine.pattern != theirs.pattern)
            d.differences.push_back(std::string("pattern ") + (mine.pattern ? toString(*mine.pattern) : "none") +
                                    " vs " + (theirs.pattern ? toString(*theirs.pattern) : "none"));
        if (mine.severity != theirs.severity)
            d.differences.push_back(std::string("severity ") + toString(mine.severity) + " vs " +
                                    toString(theirs.severity));
        if (mine.nonfiniteStep.has_value() != theirs.nonfiniteStep.has_value())
            d.differences.push_back(mine.nonfiniteStep ? "non-finite only in the reference (step " +
                                                             std::to_string(*mine.nonfiniteStep) + ")"
                                                       : "non-finite only in the other run (step " +
                                                             std::to_string(*theirs.nonfiniteStep) + ")");
        const std::string firstLayer = mine.layers.empty() ? std::string() : mine.layers.front();
        const std::string theirFirstLayer = theirs.layers.empty() ? std::string() : theirs.layers.front();
        if (!firstLayer.empty() && !theirFirstLayer.empty() && firstLayer != theirFirstLayer)
            d.differences.push_back("first bad layer " + firstLayer + " vs " + theirFirstLayer);
        result.push_back(std::move(d));
    }
    for (size_t j = 0; j < other.incidents.size(); ++j) {
        if (otherMatched[j])
            continue;
        IncidentDifference d;
        d.presence = IncidentPresence::OnlyOther;
        d.kind = other.incidents[j].kind;
        d.other = other.incidents[j];
        result.push_back(std::move(d));
    }
    const auto onset = [](const IncidentDifference& d) {
        return d.reference ? d.reference->onsetStep : d.other->onsetStep;
    };
    std::stable_sort(result.begin(), result.end(),
                     [&](const IncidentDifference& x, const IncidentDifference& y) { return onset(x) < onset(y); });
    return result;
}

Result<RunComparison> compareRuns(std::vector<ComparedRun> runs, const DivergenceConfig& config)
{
    if (runs.size() < 2)
        return Error{"a comparison needs at least two runs"};
    RunComparison comparison;
    comparison.config = config;
    comparison.runs = std::move(runs);
    const ComparedRun& reference = comparison.runs.front();
    for (size_t i = 1; i < comparison.runs.size(); ++i) {
        const ComparedRun& other = comparison.runs[i];
        RunPairComparison pair;
        pair.otherRun = i;
        for (const auto& [name, series] : reference.series) {
            auto theirs = other.series.find(name);
            if (theirs == other.series.end()) {
                pair.onlyInReference.push_back(name);
                continue;
            }
            pair.series.push_back(findDivergence(name, series, theirs->second, config));
        }
        for (const auto& [name, series] : other.series)
            if (!reference.series.count(name))
                pair.onlyInOther.push_back(name);
        std::stable_sort(pair.series.begin(), pair.series.end(), [](const SeriesDivergence& x, const SeriesDivergence& y) {
            if (x.step.has_value() != y.step.has_value())
                return x.step.has_value();
            return x.step && *x.step < *y.step;
        });
        if (pair.series.empty())
            pair.notes.push_back("no series logged by both runs: nothing to compare step by step");
        for (const SeriesDivergence& s : pair.series)
            if (s.comparedPoints == 0) {
                pair.notes.push_back("no steps in common: " + reference.label + " logs " +
                                     std::to_string(reference.scan.firstStep) + ".." +
                                     std::to_string(reference.scan.lastStep) + ", " + other.label + " " +
                                     std::to_string(other.scan.firstStep) + ".." + std::to_string(other.scan.lastStep));
                break;
            }
        if (reference.scan.lastStep != other.scan.lastStep) {
            const bool otherShorter = other.scan.lastStep < reference.scan.lastStep;
            const ComparedRun& shorter = otherShorter ? other : reference;
            const ComparedRun& longer = otherShorter ? reference : other;
            pair.notes.push_back(shorter.label + " ends at step " + std::to_string(shorter.scan.lastStep) + ", " +
                                 longer.label + " goes on to step " + std::to_string(longer.scan.lastStep) +
                                 ": series are compared up to the shorter");
        }
        pair.incidents = compareIncidents(reference.scan, other.scan, incidentMatchTolerance(reference.scan, other.scan));
        comparison.pairs.push_back(std::move(pair));
    }
    return comparison;
}


namespace {

std::string number(double value)
{
    return numberText(value, 4);
}

std::string incidentFacts(const Incident& incident)
{
    std::string facts = std::string(toString(incident.kind)) + " at step " + std::to_string(incident.onsetStep) +
                        " (" + toString(incident.severity);
    if (incident.pattern)
        facts += std::string(", ") + toString(*incident.pattern);
    if (incident.nonfiniteStep)
        facts += ", non-finite at " + std::to_string(*incident.nonfiniteStep);
    return facts + ")";
}

} // namespace

std::string divergenceWords(const SeriesDivergence& divergence, const std::string& leavingLabel,
                            const std::string& bandLabel)
{
    if (divergence.comparedPoints == 0)
        return "no steps in common";
    if (!divergence.step)
        return "never: each stays in the other's band";
    std::string words = "step " + std::to_string(*divergence.step) + ": " + leavingLabel;
    if (divergence.leftNonfinite())
        words += " is " + number(divergence.leavingValue);
    else
        words += "'s median " + number(divergence.leavingValue) +
                 (divergence.leavingValue > divergence.bandHigh ? " above" : " below");
    return words + " " + bandLabel + "'s band " + number(divergence.bandCentre) + " [" + number(divergence.bandLow) +
           ", " + number(divergence.bandHigh) + "]";
}

std::string incidentDifferenceWords(const IncidentDifference& difference, const std::string& referenceLabel,
                                    const std::string& otherLabel)
{
    switch (difference.presence) {
    case IncidentPresence::OnlyReference:
        return incidentFacts(*difference.reference) + " only in " + referenceLabel;
    case IncidentPresence::OnlyOther:
        return incidentFacts(*difference.other) + " only in " + otherLabel;
    case IncidentPresence::Both:
        break;
    }
    std::string words = incidentFacts(*difference.reference) + " in both";
    if (difference.onsetShift && *difference.onsetShift != 0)
        words += ", " + otherLabel + "'s onset " + (*difference.onsetShift > 0 ? "+" : "") +
                 std::to_string(*difference.onsetShift) + " steps";
    for (const std::string& d : difference.differences)
        words += "; " + d;
    return words;
}

} // namespace nanscope
