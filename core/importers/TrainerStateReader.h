#pragma once

// Hugging Face Trainer's trainer_state.json: the run-level fields at the top, and log_history, one
// entry per log call (train entries with loss / grad_norm / learning_rate, eval entries with
// eval_*, and a final summary with train_runtime, train_loss, ...).

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

inline constexpr const char* kTrainerStateFormat = "Hugging Face Trainer state (trainer_state.json)";

// Every numeric key of every log_history entry becomes series[key] at the entry's step, by the name
// as logged (custom trainers rename keys); NaN, Infinity and -Infinity, which Python writes bare,
// are read as data. The summary entry's values and the top-level numbers and strings become
// attributes. A file cut off or damaged inside log_history still gives every entry before the
// damage, with a warning naming the entry and its byte. Error when the file is not JSON or has no
// log_history.
Result<ScalarLog> readTrainerState(const std::string& path);

} // namespace nanscope
