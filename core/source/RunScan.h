#pragma once

// The scan of one run as every caller runs it (`nanscope scan`, the window, the HTML report): the
// run's own logs plus the facts read beside it that the scan cannot read itself (optimizer states:
// Adam epsilon domination, core/source/OptimizerScanFacts.h). What could not be read joins the
// report's notes.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"

namespace nanscope {

class RunSource;

Result<ScanReport> scanRunWithFacts(const RunSource& reader, const ScanConfig& config,
                                    const ProgressCallback& progress = {});

} // namespace nanscope
