#pragma once

// Internal to core: the LibTorch path of TensorStats (CUDA, or LibTorch's own CPU kernels as the
// reference for it). Declared without LibTorch so that TensorStats.cpp need not include it.

#include "core/TensorStats.h"

namespace nanscope::torchstats {

bool cudaAvailable();

// One fused set of reductions per tensor, queued on the device; the results of every tensor come
// back to the host in one copy at the end.
Result<std::vector<TensorStats>> computeWithTorch(const std::vector<const NamedTensor*>& tensors, bool onCuda);

} // namespace nanscope::torchstats
