#pragma once

#include "core/Progress.h"
#include "core/Result.h"
#include "core/replay/ReplayOptions.h"
#include "core/replay/ReplayTrace.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nanscope {

// Replays one step: runs the checkpoint's forward on the batch with every op probed as it runs
// (inside `if` and loop blocks too: see GraphProbes.h), computes the loss and back-propagates. The
// forward culprit is the first op whose output holds NaN or Inf while all its tensor inputs are
// finite; if every non-finite output has a non-finite input (a poisoned buffer, say), the first op
// with a non-finite output is reported, with its inputs.
Result<ReplayResult> replayStep(const ReplayOptions& options, const ProgressCallback& progress = {});

} // namespace nanscope
