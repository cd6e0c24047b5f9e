#pragma once

#include "core/scan/Incident.h"
#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/ScanConfig.h"

namespace nanscope {

class RunSource;
namespace scan {
struct ScanFacts;
}

// Finds, locates and classifies training incidents from a run's logged tables: what went wrong,
// where it began (the onset, not where NaN finally showed), which layer went bad first, sudden or
// gradual, the probable cause and what to do. See docs/scan.md for the rules and thresholds.
//
// Reads the scalar series whole (one double per logged step) and streams the [n, L] tables in
// row blocks aligned to the file's 128-row chunks, so memory stays a small multiple of one block
// whatever the run's length. Works on a run still being written: it sees the rows flushed so far.
// A healthy run gives an empty incident list. Cancelling through `progress` returns an error.
Result<ScanReport> scanRun(const RunSource& reader, const ScanConfig& config = {},
                           const ProgressCallback& progress = {});
// The same with facts the caller measured outside run.h5 (optimizer states: Adam epsilon domination).
Result<ScanReport> scanRun(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress,
                           const scan::ScanFacts& facts);

} // namespace nanscope
