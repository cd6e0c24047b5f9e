#pragma once

// The scan's rules over one run's own logs: what went wrong, where it began (the onset, not where
// NaN finally showed), which layer went bad first, sudden or gradual, the probable cause and what
// to do. docs/scan.md lists the rules and thresholds.
//
// Not the way to scan a run: `scanRun` (core/open/RunScan.h) is, for every caller. It reads the
// facts the rules cannot read themselves (optimizer states) and scans a multi-rank run rank by rank
// (core/scan/RankScan.h) before calling these rules on each run.
//
// Reads the scalar series whole (one double per logged step) and streams the [n, L] tables in
// row blocks aligned to the file's 128-row chunks, so memory stays a small multiple of one block
// whatever the run's length. Works on a run still being written: it sees the rows flushed so far.
// A healthy run gives an empty incident list. Cancelling through `progress` returns an error.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"

namespace nanscope {

class RunSource;

namespace scan {

struct ScanFacts;

Result<ScanReport> applyRules(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress,
                              const ScanFacts& facts);

} // namespace scan
} // namespace nanscope
