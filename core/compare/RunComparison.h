#pragma once

// Two or more runs side by side: where each run parts ways with the first (the reference) series by
// series, and how their incidents differ. `nanscope compare`, the report's comparison section and
// the window's compared runs all take this one value. docs/compare.md describes the method.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/compare/SeriesDivergence.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

class RunSource;

// What a comparison needs of one run: its name, its comparable series and its scan.
struct ComparedRun
{
    std::string label;  // how the user named it (the path given)
    std::string format; // RunInfo::source.format
    // Every scalar series it logged, by dataset name, each on its own table's steps.
    std::map<std::string, StepSeries> series;
    ScanReport scan;
};

// The series a comparison reads of a run: every 1-D series of its series tables (/scalars, /eval,
// /scalars_*), by dataset name; where two tables log one name, /scalars wins. Counters that say
// where training is rather than how it goes (epoch, skipped, ...) are left out.
Result<std::map<std::string, StepSeries>> readComparableSeries(const RunSource& source);


enum class IncidentPresence { OnlyReference, OnlyOther, Both };

// One incident of either run, matched with the other run's incident of the same kind near it.
struct IncidentDifference
{
    IncidentPresence presence = IncidentPresence::Both;
    IncidentKind kind = IncidentKind::Spike;
    std::optional<Incident> reference; // the first run's, when it has one
    std::optional<Incident> other;
    std::optional<int64_t> onsetShift; // other's onset - reference's onset (Both)
    // What differs besides the onset, in words: "pattern sudden vs gradual", "severity critical vs warning".
    std::vector<std::string> differences;
};

// One run against the reference.
struct RunPairComparison
{
    size_t otherRun = 1; // index into RunComparison::runs
    // Every series both logged, diverged ones first by step, then the others by name.
    std::vector<SeriesDivergence> series;
    std::vector<std::string> onlyInReference; // series names one run logs and the other does not
    std::vector<std::string> onlyInOther;
    std::vector<IncidentDifference> incidents; // by onset
    std::vector<std::string> notes;            // different lengths, no common steps, ...

    // The earliest divergence over the series; null when none diverged.
    const SeriesDivergence* firstDivergence() const;
};

struct RunComparison
{
    std::vector<ComparedRun> runs; // runs[0] is the reference
    std::vector<RunPairComparison> pairs; // one per other run, in order
    DivergenceConfig config;
};

// Matches the incidents of two scans: same kind, onsets within `toleranceSteps` (nearest first).
std::vector<IncidentDifference> compareIncidents(const ScanReport& reference, const ScanReport& other,
                                                 int64_t toleranceSteps);
// How near two onsets must be to be one incident in both runs: 5% of the longer run, at least 20 steps.
int64_t incidentMatchTolerance(const ScanReport& reference, const ScanReport& other);

// Compares every run with runs[0]. Needs at least two runs.
Result<RunComparison> compareRuns(std::vector<ComparedRun> runs, const DivergenceConfig& config = {});


} // namespace nanscope

namespace nanscope {

// One wording for the command, the report and the window.
// "step 1625: B's median 4.1 above A's band 1.2 [0.9, 1.6]" / "never: each stays in the other's band".
std::string divergenceWords(const SeriesDivergence& divergence, const std::string& leavingLabel,
                            const std::string& bandLabel);
// "blow-up at step 1625 (critical, gradual) only in B" / "... in both, onset +30 steps: pattern sudden vs gradual".
std::string incidentDifferenceWords(const IncidentDifference& difference, const std::string& referenceLabel,
                                    const std::string& otherLabel);

} // namespace nanscope
