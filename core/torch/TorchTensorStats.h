#pragma once

// The LibTorch path of TensorStats (CUDA, or LibTorch's own CPU kernels as the reference for it),
// declared without LibTorch. core/tensor has no LibTorch: installStatsBackend() hands it these.

#include "core/tensor/TensorStats.h"

namespace nanscope::torchstats {

bool cudaAvailable();

// One fused set of reductions per tensor, queued on the device; the results of every tensor come
// back to the host in one copy at the end.
Result<std::vector<TensorStats>> computeWithTorch(const std::vector<const NamedTensor*>& tensors, bool onCuda);

// Makes computeCheckpointStats use LibTorch for StatsDevice::Cuda/TorchCpu. Idempotent; every
// program that links the torch library calls it once at start.
void installStatsBackend();

} // namespace nanscope::torchstats
