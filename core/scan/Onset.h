#pragma once

// Where a rise began: smoothing through noise and walking back from a failure to the last row
// that was still at the baseline.

#include "core/scan/RobustStats.h"
#include "core/scan/ScanConfig.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nanscope::scan {

// Centred running median of rows [begin, end) with half-width h, looking at rows up to the end of
// the series so a failure right after `end` still counts. Non-finite rows count as worse than
// anything.
std::vector<double> smoothed(const LogSeries& s, size_t begin, size_t end, int64_t h);

// A rise that ends in a failure, as findOnset sees it.
struct Rise
{
    size_t onsetRow = 0;
    double baseline = kNaN; // log10
    double delta = 0;       // decades above the baseline that count as "worse"
};

// Where a rise that ends in a failure at row f began, looking at rows [a, f). The baseline is the
// median before the onset, the noise is the spread of the smoothed curve there, and the onset is
// the row after the last one where the smoothed curve was still within the noise of the baseline.
// Iterated, since baseline and onset depend on each other. Without a rise, onsetRow is f.
Rise findOnset(const LogSeries& s, size_t a, size_t f, const ScanConfig& config);

} // namespace nanscope::scan
