#pragma once

#include <vector>

namespace nanscope {

// The largest smoothing weight the overview offers: at 1 the average never moves from its start.
inline constexpr double kMaxSmoothingWeight = 0.99;

// TensorBoard's scalar smoothing, so that a curve reads here as it did there: an exponential
// moving average by index (not by step gap) with weight `weight` in [0, 1), debiased by
// 1 - weight^n so that the first points are not pulled towards zero. A non-finite value is passed
// through as it is and leaves the average untouched: a NaN stays a NaN where it was logged, never
// smoothed away, and never poisons the points after it. A constant series is returned as it is.
std::vector<double> smoothEma(const std::vector<double>& values, double weight);

} // namespace nanscope
