#pragma once

// The robust statistics every scan rule measures with: medians instead of means, the median
// absolute deviation as the noise, Theil-Sen slopes, and series on a log10 scale (the scale every
// "how much worse" of the scan is measured on).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace nanscope::scan {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// log10 of an exact zero: below anything a float can hold, so zero gradients read as "vanished".
inline constexpr double kZeroLog = -46.0;
// Non-finite rows enter running medians as this: they are worse than any finite value.
inline constexpr double kNonfiniteLog = 1e300;

// Median that reorders `values` (the running medians use it on scratch buffers). NaN when empty.
// An even count averages the two middle values, unless one is kNonfiniteLog: "worse than
// anything" stays that, it is not averaged into a huge finite level.
double medianInPlace(std::vector<double>& values);
// A median absolute deviation scaled to the standard deviation of normally distributed noise.
inline double madToSigma(double mad)
{
    return 1.4826 * mad;
}
// The median of an even count from its two middle values (below <= above), by that rule.
inline double middlePairMedian(double below, double above)
{
    return (above >= kNonfiniteLog || below >= kNonfiniteLog) ? std::max(above, below) : 0.5 * (above + below);
}
inline double medianOf(std::vector<double> values)
{
    return medianInPlace(values);
}

// The noise of a sample from its absolute deviations: the median absolute deviation scaled to a
// normal distribution's sigma. Reorders `absoluteDeviations`.
double noiseFromDeviationsInPlace(std::vector<double>& absoluteDeviations);
// The same noise around `centre`: turns `values` into their absolute deviations from it first.
double noiseAroundInPlace(std::vector<double>& values, double centre);

// Theil-Sen slope of y over x, on at most ~120 evenly picked points so it stays cheap.
double theilSenSlope(const std::vector<double>& x, const std::vector<double>& y);

// log10|v|, kZeroLog for 0.
double log10Abs(double v);

// A series on the log10 scale, with the raw values it came from.
struct LogSeries
{
    std::vector<int64_t> steps;
    std::vector<double> log; // log10|value|; kZeroLog for 0; unused where !finite
    std::vector<uint8_t> finite;
    std::vector<double> raw;

    size_t size() const { return steps.size(); }
    bool empty() const { return steps.empty(); }
    // What a running median sees of a row: non-finite rows are worse than anything.
    double at(size_t row) const { return finite[row] ? log[row] : kNonfiniteLog; }
};

// The first min(steps, values) rows of a series, on the log10 scale.
LogSeries makeLogSeries(const std::vector<int64_t>& steps, const std::vector<double>& values);

// Row of the first step >= `step` (steps ascending); steps.size() when none.
size_t rowAtOrAfter(const std::vector<int64_t>& steps, int64_t step);
// Row of the first step > `step`.
size_t rowAfter(const std::vector<int64_t>& steps, int64_t step);

} // namespace nanscope::scan
