#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// What a forward returned, and the loss the replay differentiates: the loss conventions.

#include "core/replay/BlowupBaseline.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace nanscope::replaytorch {

// The first tensor of what forward returned (the tensor, or the first of a tuple or list).
torch::Tensor firstTensor(const c10::IValue& value);

// Every tensor a forward returned (a tensor, or inside a tuple, list or dict).
void collectTensors(const c10::IValue& value, std::vector<torch::Tensor>& tensors);

// The named loss of the output against the targets, in float32 as AMP computes losses:
// cross_entropy, nll, mse or bce_with_logits; throws std::invalid_argument for another name.
torch::Tensor computeLoss(const std::string& name, const torch::Tensor& output, const torch::Tensor& targets);

// The loss a forward returned, the Hugging Face way: a scalar tensor, a dict with a "loss" entry,
// a NamedTuple with a `loss` field, or a tuple whose first element is a scalar tensor. `loss` is
// undefined when there is none; a named "loss" that is not a scalar is returned as it is, so that
// the caller can say so.
struct ReturnedLoss
{
    torch::Tensor loss;
    std::string access; // "" (the scalar itself), "['loss']", ".loss", "[0]"
    torch::Tensor logits; // a "logits" entry, when there is one
    std::string logitsAccess;
};

ReturnedLoss lossInOutput(const c10::IValue& value, const c10::TypePtr& type);

// What a forward returned, for messages: "float32 [8, 3]", "a dict (keys: logits, hidden)".
std::string describeReturn(const c10::IValue& value);

// A subset of a batch whose gradients hold a non-finite value, or whose total gradient norm blew
// up against the run's typical one (core/replay/BlowupBaseline): the sample bisection's verdict
// on the backward of both replay engines. Undefined gradients (unused parameters) are skipped.
bool gradientsBad(const std::vector<torch::Tensor>& gradients, const BlowupBaseline& baseline);

} // namespace nanscope::replaytorch
