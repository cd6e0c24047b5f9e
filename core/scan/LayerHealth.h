#pragma once

// A layer's health, as every view shows it (the layer tree's icons, the BatchNorm layer list): one
// judgement, derived from the scan's incidents so that an icon never disagrees with the incident
// list (a layer whose gradients went NaN during a skipped step the run recovered from is not red).

#include "core/scan/Incident.h"

#include <string>
#include <vector>

namespace nanscope {

enum class LayerHealth { Ok, Warning, Bad };

// Per parameter name: Bad when a critical incident names it (or the module that owns it), Warning
// when only a warning does, else Ok. Informational incidents colour nothing.
std::vector<LayerHealth> judgeLayerHealth(const std::vector<std::string>& parameterNames, const ScanReport& scan);

} // namespace nanscope
