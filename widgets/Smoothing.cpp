#include "Smoothing.h"

#include <algorithm>
#include <cmath>

namespace nanscope {

std::vector<double> smoothEma(const std::vector<double>& values, double weight)
{
    weight = std::clamp(weight, 0.0, kMaxSmoothingWeight);
    // TensorBoard leaves a constant series alone (its debiased average would be the same anyway,
    // bar rounding, which would then label a flat learning rate with wobbling digits).
    const bool constant = std::all_of(values.begin(), values.end(),
                                      [&](double v) { return v == values.front(); });
    if (weight <= 0 || constant)
        return values;
    std::vector<double> smoothed(values.size());
    double last = 0;
    int accumulated = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        const double value = values[i];
        if (!std::isfinite(value)) {
            smoothed[i] = value;
            continue;
        }
        last = last * weight + (1 - weight) * value;
        ++accumulated;
        smoothed[i] = last / (1 - std::pow(weight, accumulated));
    }
    return smoothed;
}

} // namespace nanscope
