#pragma once

// The scan of a run as every caller runs it (`nanscope scan`, the window, the HTML report): the
// run's own logs plus the facts read beside it that the scan cannot read itself (optimizer states:
// Adam epsilon domination, core/source/OptimizerScanFacts.h), and for a multi-rank run every rank
// and the ranks together. What could not be read joins the report's notes.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/Incident.h"
#include "core/scan/RankScan.h"
#include "core/scan/ScanConfig.h"

#include <optional>

namespace nanscope {

class RunSource;

// The run shown (one rank of a multi-rank run: the rank selected), with its facts.
Result<ScanReport> scanRunWithFacts(const RunSource& reader, const ScanConfig& config,
                                    const ProgressCallback& progress = {});

// What scanning a whole run found: its incidents and, for a multi-rank run, every rank's summary
// (each incident then names its rank).
struct WholeRunScan
{
    ScanReport report;
    std::optional<RankScanReport> ranks;
};

// A multi-rank run scanned whole (every rank in parallel where the reads allow, then the rank
// rules); any other run as scanRunWithFacts.
Result<WholeRunScan> scanWholeRun(const RunSource& reader, const ScanConfig& config,
                                  const ProgressCallback& progress = {});

} // namespace nanscope
