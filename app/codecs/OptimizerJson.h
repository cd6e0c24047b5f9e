#pragma once

// The optimizer part of `nanscope stats --json` (an optimizer.pt, or a Lightning checkpoint's
// optimizer_states), written by the command and read back by the checkpoints pane: encoder and
// decoder side by side, as CheckpointJson.h does for tensors, so nothing is dropped or spelled two
// ways on the way through the child process.

#include "widgets/ViewData.h"

#include <QJsonObject>

namespace nanscope {

// Each parameter's object also carries "update_to_lr" (updateToLearningRate) for scripts; the
// decoder derives it again from the update RMS and the group's lr.
QJsonObject checkpointOptimizerToJson(const CheckpointOptimizer& optimizer);
CheckpointOptimizer checkpointOptimizerFromJson(const QJsonObject& json);

} // namespace nanscope
