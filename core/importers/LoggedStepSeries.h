#pragma once

// A log whose own step counter is a history row number (W&B's `_step` counts every wandb.log call)
// while the training logged its optimizer step as a value (`train/global_step`, which transformers'
// WandbCallback and Lightning's WandbLogger add to every row): the training's count is the step a
// user and nanscope's other sources mean.

#include "core/importers/ScalarLog.h"

namespace nanscope {

// Re-keys every series of `log` by the logged step counter (the best-ranked name of
// records::stepKeyRank among its series, not `_step`) when that counter is a non-negative integer
// that strictly increases with the log's own steps and is logged wherever the loss is; then drops
// it from the series and says so in a note. Returns whether it did.
bool stepsFromLoggedCounter(ScalarLog& log);

} // namespace nanscope
