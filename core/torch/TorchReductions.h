#pragma once

// Internal to core/torch: the device half of the statistics kernel. The reductions of one tensor
// are queued on its device as one small float64 tensor and nothing is read back; callers stack the
// results of many tensors and copy them to the host once (TorchTensorStats for checkpoints, the
// Guard for one training step), then decode each with statsFromSlots.

#include "core/tensor/TensorStats.h"

#include <torch/torch.h>

namespace nanscope::torchstats {

enum Slot { kCount, kNan, kPosInf, kNegInf, kZero, kSubnormal, kMin, kMax, kMean, kM2, kNonzeroAbsmin, kSlots };

// The smallest normal value of a floating-point dtype (0 for the others): below it a non-zero
// value counts as subnormal.
double smallestNormal(c10::ScalarType type);

// kSlots float64 values on x's device: finite count, NaN, +Inf, -Inf, zero and subnormal counts,
// and min, max, mean and the sum of squared deviations over the finite elements, and the
// smallest non-zero finite |x| (+inf when there is none).
torch::Tensor queueReductions(const torch::Tensor& x);

// The kernel's statistics from one tensor's slots, read back to the host.
void fillFromSlots(const double* slots, TensorStats& stats);

} // namespace nanscope::torchstats
