#include "core/scan/IncidentCheckpoint.h"

#include <algorithm>

namespace nanscope {

namespace {

// Incidents whose damage is in the model's state after their onset step's forward or update.
bool damagesTheState(const Incident& incident)
{
    return incident.kind == IncidentKind::BnCorruption;
}

} // namespace

std::optional<IncidentCheckpoint> checkpointShowingIncident(const Incident& incident,
                                                            const std::vector<int64_t>& checkpointSteps)
{
    if (checkpointSteps.empty())
        return std::nullopt;
    const int64_t onset = incident.onsetStep;
    const auto after = std::upper_bound(checkpointSteps.begin(), checkpointSteps.end(), onset);
    const std::optional<int64_t> atOrBefore =
        after == checkpointSteps.begin() ? std::nullopt : std::optional<int64_t>(*std::prev(after));
    const std::string onsetText = std::to_string(onset);
    if (damagesTheState(incident)) {
        if (after != checkpointSteps.end())
            return IncidentCheckpoint{*after, "the first checkpoint saved after step " + onsetText +
                                                  ", whose forward wrote the damage" +
                                                  (atOrBefore ? " (checkpoint " + std::to_string(*atOrBefore) +
                                                                    " holds the state before it)"
                                                              : std::string())};
        if (atOrBefore)
            return IncidentCheckpoint{*atOrBefore, "no checkpoint was saved after step " + onsetText +
                                                       ": this one holds the state before the damage"};
    }
    if (atOrBefore)
        return IncidentCheckpoint{*atOrBefore, {}};
    return IncidentCheckpoint{checkpointSteps.front(), "no checkpoint was saved before step " + onsetText};
}

} // namespace nanscope
