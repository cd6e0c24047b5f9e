#pragma once

// The robust statistics every scan rule measures with: medians instead of means, the median
// absolute deviation as the noise, Theil-Sen slopes, and series on a log10 scale (the scale every
// "how much worse" of the scan is measured on).

#include <algorithm>
#include <cmath>
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

// A window of values kept sorted as it slides (values added and removed one at a time), whose
// median and median absolute deviation are read off the order instead of selected afresh. The
// figures are medianInPlace's and noiseAroundInPlace's, to the bit: the same order statistics of
// the same values, combined by the same expressions. Adding or removing moves the values above
// it: cheap for windows up to a few hundred values (spikeRows' 1,000-step window, the smoothing
// of onsets), where a tree's node per value costs more than the move.
class SortedWindow
{
public:
    void add(double value) { m_values.insert(std::upper_bound(m_values.begin(), m_values.end(), value), value); }
    void remove(double value)
    {
        const auto it = std::lower_bound(m_values.begin(), m_values.end(), value);
        if (it != m_values.end() && *it == value)
            m_values.erase(it);
    }
    size_t size() const { return m_values.size(); }

    double median() const
    {
        const size_t n = m_values.size();
        if (n == 0)
            return kNaN;
        return n % 2 == 0 ? middlePairMedian(m_values[n / 2 - 1], m_values[n / 2]) : m_values[n / 2];
    }

    // madToSigma of the median of |v - centre|: the deviations below and above the centre are two
    // sorted runs walked outward from it, merged up to the middle rank.
    double noiseAround(double centre) const
    {
        const size_t n = m_values.size();
        const size_t split = size_t(std::lower_bound(m_values.begin(), m_values.end(), centre) - m_values.begin());
        size_t below = split, above = split; // next candidates: m_values[below - 1], m_values[above]
        const size_t mid = n / 2;
        double previous = kNaN, current = kNaN;
        for (size_t rank = 0; rank <= mid; ++rank) {
            const bool takeBelow =
                below > 0 && (above >= n || std::fabs(m_values[below - 1] - centre) <= std::fabs(m_values[above] - centre));
            previous = current;
            current = takeBelow ? std::fabs(m_values[--below] - centre) : std::fabs(m_values[above++] - centre);
        }
        const double mad = n % 2 == 0 ? middlePairMedian(previous, current) : current;
        return madToSigma(mad);
    }

private:
    std::vector<double> m_values;
};

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
// Sets `log` and `finite` from `raw` (steps and raw values in place; their vectors keep their
// room, so a series refilled for column after column allocates nothing).
void fillLogs(LogSeries& s);

// Row of the first step >= `step` (steps ascending); steps.size() when none.
size_t rowAtOrAfter(const std::vector<int64_t>& steps, int64_t step);
// Row of the first step > `step`.
size_t rowAfter(const std::vector<int64_t>& steps, int64_t step);

} // namespace nanscope::scan
