#pragma once

// The Hugging Face Trainer hides a NaN or Inf loss from its own log: with logging_nan_inf_filter
// (on by default) a non-finite step adds the average of the steps since the last log instead of
// itself, which is exactly 0.0 when it is the only step of its logging interval (logging_steps 1).
// trainer_state.json then says "loss": 0.0 where the loss was NaN (transformers 5.23, trainer.py,
// measured with a batch whose labels are all -100: 0/0 in the loss).

#include "core/importers/ScalarLog.h"

namespace nanscope {

// Reads every such 0.0 in the series `lossName` of a Trainer log of one step per logging interval
// (the caller knows it is one: trainer_state.json's logging_steps, a W&B run's config) as the
// non-finite value it stands for, and says so in a note naming the steps: a logged loss of exactly
// 0.0 whose neighbours are far from zero, with a gradient norm (`gradNormName`) of 0.0, NaN or Inf
// or none at that step. A loss that really reached zero stays 0.0: its neighbours are near zero too.
void readHiddenNonfiniteLosses(ScalarLog& log, const std::string& lossName, const std::string& gradNormName);

// True when a Trainer logged every step with the NaN filter on, as `logging_steps` and
// `logging_nan_inf_filter` say ("1", "true"; an absent filter is on: the Trainer's default).
bool trainerHidesNonfiniteLosses(const std::string& loggingSteps, const std::string& nanInfFilter);

} // namespace nanscope
