#pragma once

// Runs read and scanned for a comparison (`nanscope compare`, the window's compared runs, the
// report's --compare section): each run's series and its scan by `scanRun`, the one scan entry
// point, so a compared run is judged as `nanscope scan` judges it (its optimizer states, every
// rank). The comparison itself is core/compare, on the values this returns.

#include "core/Result.h"
#include "core/compare/RunComparison.h"
#include "core/scan/ScanConfig.h"

#include <string>
#include <vector>

namespace nanscope {

class RunSource;

// Reads the series and scans the run.
Result<ComparedRun> loadComparedRun(const RunSource& source, const std::string& label,
                                    const ScanConfig& scanConfig = {});

// Loads (reads and scans) each source and compares them. The scans run in parallel threads when
// HDF5 is built thread-safe (its global lock then serialises the reads), one after the other
// otherwise. `labels` names each source; an error names the run that failed.
Result<RunComparison> compareRunSources(const std::vector<const RunSource*>& sources,
                                        const std::vector<std::string>& labels, const ScanConfig& scanConfig = {},
                                        const DivergenceConfig& config = {});

} // namespace nanscope
