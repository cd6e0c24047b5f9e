#pragma once

// The judgements over a replay's ops, as plain values: which op made the first non-finite value,
// which gradient went non-finite first, which ops a layer filter lists. Made once here for both
// replay engines: the TorchScript one (core/torch/Replay, in `nanscope replay`'s process) and the
// eager one (python/nanscope_recorder/eager_replay.py, a Python child whose JSON carries the
// ops' statistics and nothing judged).

#include "core/replay/ReplayTrace.h"

#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// The forward culprit: the first op computed from the batch whose output holds NaN or Inf while all
// its tensor inputs are finite. Failing that, the first such op with a non-finite input, followed
// back through the earlier ops whose output that input is (by its statistics) to where it began:
// an op that made it from finite inputs (exp of a learned temperature), else the first op that read
// a poisoned parameter, buffer or batch, with a note saying so. A NaN or Inf made from constants
// and weights alone that nothing computed from the batch carries on (T5's log(0) position buckets,
// a mask of -inf) is no culprit: a note says it was seen.
std::optional<ReplayOp> forwardCulprit(const std::vector<ReplayOp>& ops, std::vector<std::string>& notes);

// When the culprit read a parameter that held NaN or Inf already (its input's statistics are the
// parameter's), a note naming it: a fused weight (a mixture of experts' stacked experts) reaches
// the culprit through a transpose or a slice, and the note says whose weight it was.
void nameTheStateTheCulpritRead(ReplayResult& result);

// The first op, in backward order (the reverse of execution), whose output's gradient is not finite.
std::optional<ReplayOp> firstNonfiniteGradient(const std::vector<ReplayOp>& ops);

// The ops a layer filter lists: those of modules within `prefix` (PyTorch's named_modules() path),
// and always the op `culpritIndex`, so that a filter never hides the op the views highlight.
std::vector<ReplayOp> opsWithinLayer(std::vector<ReplayOp> ops, const std::string& prefix, int culpritIndex);

// For a replay whose ops arrive with statistics only (the eager replay): each op's precision
// headroom, the forward culprit, the first non-finite gradient, the signature findings over every
// op, and the layer filter, exactly as the TorchScript engine judges them.
void judgeReplayOps(ReplayResult& result, std::vector<ReplayOp> allOps, const std::string& layerPrefix);

} // namespace nanscope
