#pragma once

// The one way to scan a run, for every caller (`nanscope scan`, the window, the report, compared
// runs, the benchmarks): the run's own logs through the rules (core/scan/RunRules.h) plus the facts
// read beside it that the rules cannot read themselves (optimizer states: Adam epsilon domination,
// core/open/OptimizerScanFacts.h); a multi-rank run rank by rank, each rank with its own facts,
// then the ranks together (core/scan/RankScan.h). What could not be read joins the report's notes.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/Incident.h"
#include "core/scan/RankScan.h"
#include "core/scan/ScanConfig.h"

#include <optional>

namespace nanscope {

class RunSource;

// What a scan covers in a multi-rank run: every rank and the rank rules, or only the rank the
// source shows (`nanscope scan --rank N`). A single run is scanned whole either way.
enum class RankScope { EveryRank, ShownRank };

// What scanning a run found: its incidents and, for a multi-rank run scanned whole, every rank's
// summary (each incident then names its rank).
struct WholeRunScan
{
    ScanReport report;
    std::optional<RankScanReport> ranks;
};

Result<WholeRunScan> scanRun(const RunSource& reader, const ScanConfig& config = {},
                             const ProgressCallback& progress = {}, RankScope scope = RankScope::EveryRank);

} // namespace nanscope
