#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// The saved batch a replay feeds the model.

#include "core/Result.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace nanscope::replaytorch {

struct Batch
{
    std::vector<torch::Tensor> inputs;
    // A batch held by name (a dict: a Hugging Face batch, the model's keyword arguments), in the
    // file's order; `inputs` is empty then.
    std::vector<std::pair<std::string, torch::Tensor>> namedInputs;
    torch::Tensor targets;
    std::string lossName;
    // The model's method that computed the loss from the batch when it is not forward
    // (Lightning's "training_step"): an exported checkpoint of that run is that method.
    std::string call;
    int64_t step = -1;
};

// A batch file: a pickled dict with "inputs" (a tensor, a list of them, or a dict of them by
// forward's argument names), and optionally
// "targets", "loss", "call" and "step". Errors name the file and what is wrong.
Result<Batch> readBatch(const std::string& path);

} // namespace nanscope::replaytorch
