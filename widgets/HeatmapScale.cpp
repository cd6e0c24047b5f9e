#include "HeatmapScale.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An empty or one-value range still spans something, so that a colour map can be drawn.
void widen(double& lower, double& upper)
{
    if (!(upper > lower)) {
        lower -= 0.5;
        upper = lower + 1;
    }
}

} // namespace

ScaledHeatmap scaleHeatmap(const std::vector<float>& values, size_t rows, size_t bins, HeatmapScale scale)
{
    ScaledHeatmap out;
    const size_t cells = std::min(values.size(), rows * bins);
    out.values.assign(values.begin(), values.begin() + std::ptrdiff_t(cells));
    for (double& v : out.values)
        if (!std::isfinite(v))
            v = kNaN;
    std::vector<double> finite;
    finite.reserve(out.values.size());
    for (double v : out.values)
        if (!std::isnan(v))
            finite.push_back(v);
    if (finite.empty()) {
        out.lower = 0;
        out.upper = 1;
        return out;
    }
    if (scale == HeatmapScale::PerLayer) {
        for (size_t r = 0; r < rows; ++r) {
            double low = std::numeric_limits<double>::infinity(), high = -low;
            for (size_t b = 0; b < bins && r * bins + b < cells; ++b) {
                const double v = out.values[r * bins + b];
                if (!std::isnan(v)) {
                    low = std::min(low, v);
                    high = std::max(high, v);
                }
            }
            for (size_t b = 0; b < bins && r * bins + b < cells; ++b) {
                double& v = out.values[r * bins + b];
                if (!std::isnan(v))
                    v = high > low ? (v - low) / (high - low) : 0.5;
            }
        }
        out.lower = 0;
        out.upper = 1;
        return out;
    }
    const auto [low, high] = std::minmax_element(finite.begin(), finite.end());
    out.lower = *low;
    out.upper = *high;
    if (scale == HeatmapScale::Percentile99) {
        const size_t at = size_t(std::floor(0.99 * double(finite.size() - 1)));
        std::nth_element(finite.begin(), finite.begin() + std::ptrdiff_t(at), finite.end());
        out.upper = finite[at];
    }
    widen(out.lower, out.upper);
    return out;
}

} // namespace nanscope
