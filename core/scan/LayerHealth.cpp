#include "core/scan/LayerHealth.h"

#include "core/run/LayerNames.h"

#include <algorithm>

namespace nanscope {

namespace {

// Incidents name parameters ("fc1.weight"), modules ("fc1", from activations and buffers) or
// inputs; a parameter is concerned by its own name and by its module's.
bool names(const Incident& incident, const std::string& parameter)
{
    const std::string module = layernames::owningModule(parameter);
    auto concerns = [&](const std::string& named) {
        return named == parameter || (!module.empty() && named == module);
    };
    if (std::any_of(incident.layers.begin(), incident.layers.end(), concerns))
        return true;
    return std::any_of(incident.evidence.layerOnsets.begin(), incident.evidence.layerOnsets.end(),
                       [&](const LayerOnset& onset) { return concerns(onset.name); });
}

LayerHealth healthOf(Severity severity)
{
    switch (severity) {
    case Severity::Critical: return LayerHealth::Bad;
    case Severity::Warning: return LayerHealth::Warning;
    case Severity::Info: return LayerHealth::Ok;
    }
    return LayerHealth::Ok;
}

} // namespace

std::vector<LayerHealth> judgeLayerHealth(const std::vector<std::string>& parameterNames, const ScanReport& scan)
{
    std::vector<LayerHealth> health(parameterNames.size(), LayerHealth::Ok);
    for (size_t i = 0; i < parameterNames.size(); ++i)
        for (const Incident& incident : scan.incidents)
            if (names(incident, parameterNames[i]))
                health[i] = std::max(health[i], healthOf(incident.severity));
    return health;
}

} // namespace nanscope
