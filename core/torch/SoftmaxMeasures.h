#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// What a softmax, log_softmax or the logits before a loss say about the model's confidence.

#include "core/replay/ReplayTrace.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include <optional>
#include <string>

namespace nanscope::replaytorch {

bool isSoftmax(const torch::jit::Node* node); // softmax or log_softmax
bool isLogSoftmax(const torch::jit::Node* node);

// The mean over rows (along `dim`) of the entropy -sum p log p of a softmax's output (of a
// log_softmax's, read as log p). A row holding NaN or +Inf has no entropy and is left out.
std::optional<double> meanRowEntropy(const torch::Tensor& output, int64_t dim, bool logProbabilities);

// log Z = logsumexp along the class dim, per row, summarised over the rows where it is finite.
LogitsSignature logZOf(const torch::Tensor& logits, int64_t dim, std::string from, int opIndex);

} // namespace nanscope::replaytorch
