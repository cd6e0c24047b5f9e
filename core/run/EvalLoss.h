#pragma once

#include "core/run/RunFormat.h"

#include <string>

namespace nanscope::runformat {

// The evaluation loss logged on steps of its own (other tools evaluate at a rate of their own): the
// first table other than /scalars, without per-layer columns, that holds an eval_loss dataset.
// /scalars/eval_loss, on the training steps, is preferred where a run has it. The scan
// (ScanInputs) and the overview plot both choose with this.
inline constexpr const char* kEvalLoss = "eval_loss";
inline bool isEvalLossTable(const std::string& table, bool perLayerColumns, bool holdsEvalLoss)
{
    return table != kScalars && !perLayerColumns && holdsEvalLoss;
}

} // namespace nanscope::runformat
