#pragma once

// Plain values the views are fed with. The app reads them from core off the GUI thread.

#include "core/LayerHeatmap.h"

#include <QString>

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

struct BatchNormSeries
{
    std::string name;
    std::vector<int64_t> steps;
    std::vector<double> meanMin, meanMax, varMin, varMax, nonfinite;
};

// One layer's series for the detail pane.
struct LayerDetail
{
    QString layer;
    QString module; // the module whose output /activations logs
    QString error;
    std::vector<int64_t> steps;
    std::vector<double> gradNorm, paramNorm, gradNonfinite;
    std::vector<int64_t> activationSteps;
    std::vector<double> activationMin, activationMax, activationMean, activationStd, activationNan, activationInf;
};

} // namespace nanscope
