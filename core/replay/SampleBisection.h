#pragma once

// Which samples of a batch make a replay non-finite, by bisection, for both replay engines
// (core/torch/Replay.cpp for TorchScript, ExportReplay.cpp for exported programs). No LibTorch:
// the engine says whether a subset is bad.
//
// BatchNorm in training mode cannot run a one-sample batch, and a NaN sample poisons the batch
// statistics of its whole batch; so every subset is padded with samples known to be clean, and a
// subset is bad when it makes the padded batch non-finite.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nanscope {

// The bad samples of a batch of `n`, ascending; empty when the whole batch is not bad. `isBad`
// runs the subset given (sample indices) and says whether it is. A note says so when no clean
// padding was found and every sample is reported.
std::vector<int64_t> bisectBadSamples(int64_t n, const std::function<bool(const std::vector<int64_t>&)>& isBad,
                                      std::vector<std::string>& notes);

} // namespace nanscope
