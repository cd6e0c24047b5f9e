#pragma once

// What counts as a poisoned or collapsed BatchNorm running statistic. The one definition that the
// scan, the BatchNorm view, the checkpoint flags (`nanscope stats`), the report and the layer icons
// all call, so that they never disagree about the same buffer.

#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

namespace nanscope::batchnorm {

// A running variance at or below this has collapsed: normalising by sqrt(var + eps) then divides by
// about sqrt(eps), and evaluation outputs blow up while training (which uses batch statistics)
// looks fine. The scan's `running_var_floor` setting overrides it.
constexpr double kCollapsedVariance = 1e-10;

enum class BufferHealth {
    Healthy,
    Poisoned,  // a non-finite element in the running mean or variance
    Negative,  // a negative running variance: no variance can be, so the buffer is corrupt
    Collapsed, // the smallest running variance is at or below the floor
};

// One layer at one step: `nonfinite` counts non-finite elements of its buffers, `varianceMin` is
// the smallest finite running variance (NaN when unknown).
BufferHealth judgeBuffers(double nonfinite, double varianceMin, double floor = kCollapsedVariance);

// The first steps at which a layer's buffers were poisoned and collapsed; -1 when never.
struct BufferHistory
{
    int64_t poisonedFrom = -1;
    int64_t negativeFrom = -1;
    int64_t collapsedFrom = -1;
    bool healthy() const { return poisonedFrom < 0 && negativeFrom < 0 && collapsedFrom < 0; }
};
BufferHistory judgeHistory(const std::vector<int64_t>& steps, const std::vector<double>& nonfinite,
                           const std::vector<double>& varianceMin, double floor = kCollapsedVariance);

// True for a state_dict key naming a BatchNorm running variance ("bn1.running_var").
bool isRunningVarianceName(const std::string& tensorName);
// True for either running statistic of a BatchNorm layer (running_mean, running_var): buffers, not
// parameters, so gradient checks never see them.
bool isRunningStatisticName(const std::string& tensorName);

} // namespace nanscope::batchnorm
