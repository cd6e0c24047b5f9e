#pragma once

// Which saved checkpoint shows an incident, for the Checkpoints tab. Checkpoint N holds the state
// step N's forward ran on (core/run/CheckpointPairing.h), so what step N's forward or update wrote
// into the model's state (BatchNorm running statistics poisoned by its batch) is first seen in the
// first checkpoint after N: checkpoint N itself shows nothing flagged. Other incidents are shown
// on the latest checkpoint at or before their onset, the state their steps ran on.

#include "core/scan/Incident.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

struct IncidentCheckpoint
{
    int64_t step = -1;
    // Why this one, when it is not the one at or before the onset ("the first checkpoint saved
    // after step 50, whose forward wrote the damage"); empty otherwise.
    std::string why;
};

// `checkpointSteps` ascending. Nothing when no checkpoint was saved.
std::optional<IncidentCheckpoint> checkpointShowingIncident(const Incident& incident,
                                                            const std::vector<int64_t>& checkpointSteps);

} // namespace nanscope
