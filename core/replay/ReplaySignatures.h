#pragma once

// The judgement over a replay's signatures (ReplayTrace.h): which softmax calls show attention
// logits that have grown, which ops come too close to float16's largest value, whether the loss
// was computed in low precision. The replay engine calls it once, over every op before the layer
// filter, and the findings travel with the result; the pane marks ops by the same thresholds.
// Plain values, no LibTorch; the texts come from core/scan/Diagnosis.

#include "core/replay/ReplayTrace.h"

#include <optional>
#include <vector>

namespace nanscope {

// A softmax over logits at least this large (exp(30) ~ 1e13) whose rows are near one-hot (mean
// entropy under this share of a uniform row's): attention logit growth. Inputs of fewer than 3
// dims (a classifier's [batch, classes]) are not attention, and a confident classifier is fine.
inline constexpr double kAttentionLogitAbsmax = 30.0;
inline constexpr double kAttentionEntropyShare = 0.2;

// Under kNearFloat16Bits of headroom to float16's largest value (core/tensor/FloatLimits.h, the
// scan's "near the float16 limit" too).
bool lowFloat16Headroom(const PrecisionHeadroom& headroom);
// `inputDims`: the number of dimensions of the softmax's input (that of its output).
bool attentionLogitsGrown(const SoftmaxSignature& softmax, size_t inputDims);

// `ops`: every op of the replay, in execution order; `lossOp`: the op whose output is the loss,
// when the model computed it in forward.
std::vector<ReplayFinding> judgeReplaySignatures(const std::vector<ReplayOp>& ops, const std::optional<ReplayOp>& lossOp);

} // namespace nanscope
