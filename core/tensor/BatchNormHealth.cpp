#include "core/tensor/BatchNormHealth.h"

#include <algorithm>
#include <cmath>

namespace nanscope::batchnorm {

BufferHealth judgeBuffers(double nonfinite, double varianceMin, double floor)
{
    if (nonfinite > 0)
        return BufferHealth::Poisoned;
    if (std::isfinite(varianceMin) && varianceMin < 0)
        return BufferHealth::Negative;
    if (std::isfinite(varianceMin) && varianceMin <= floor)
        return BufferHealth::Collapsed;
    return BufferHealth::Healthy;
}

BufferHistory judgeHistory(const std::vector<int64_t>& steps, const std::vector<double>& nonfinite,
                           const std::vector<double>& varianceMin, double floor)
{
    BufferHistory history;
    for (size_t i = 0; i < steps.size(); ++i) {
        const double bad = i < nonfinite.size() ? nonfinite[i] : 0.0;
        const double var = i < varianceMin.size() ? varianceMin[i] : std::nan("");
        switch (judgeBuffers(bad, var, floor)) {
        case BufferHealth::Poisoned:
            if (history.poisonedFrom < 0)
                history.poisonedFrom = steps[i];
            break;
        case BufferHealth::Negative:
            if (history.negativeFrom < 0)
                history.negativeFrom = steps[i];
            break;
        case BufferHealth::Collapsed:
            if (history.collapsedFrom < 0)
                history.collapsedFrom = steps[i];
            break;
        case BufferHealth::Healthy: break;
        }
    }
    return history;
}

bool isRunningVarianceName(const std::string& tensorName)
{
    static const std::string suffix = "running_var";
    return tensorName.size() >= suffix.size()
           && tensorName.compare(tensorName.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isRunningStatisticName(const std::string& tensorName)
{
    static const std::string mean = "running_mean";
    return isRunningVarianceName(tensorName)
           || (tensorName.size() >= mean.size() && tensorName.compare(tensorName.size() - mean.size(), mean.size(), mean) == 0);
}

} // namespace nanscope::batchnorm
