#pragma once

// What an Adam-family optimizer's saved state says about each parameter: the size of its moments,
// the update it last applied, and how much of it epsilon dominates (sqrt(v_hat) <= eps: the
// gradient's second moment has fallen below eps, so Adam's step there is no longer normalised).
// Read from a Hugging Face `optimizer.pt` (torch.save of an optimizer state_dict) or a Lightning
// `.ckpt` (its optimizer_states[0]) by core's safe unpickler; plain C++ over the tensor bytes.

#include "core/Result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// A trainable parameter of the model, in the order the model registers them (model.parameters()).
struct ModelParameter
{
    std::string name;
    std::vector<int64_t> shape;
};

struct OptimizerParameterState
{
    int64_t index = 0; // the optimizer's own index (torch numbers parameters 0, 1, ... over its groups)
    size_t group = 0; // which param_groups entry holds it
    std::string name; // the model's name, or "param #3 [64, 3]" when the names could not be matched
    std::vector<int64_t> shape; // of its state tensors; empty without state
    bool hasState = false; // false: the optimizer has stepped it never (it had no gradient yet)
    std::optional<double> step;
    std::optional<double> expAvgRms; // RMS of exp_avg (the first moment)
    std::optional<double> expAvgSqRootRms; // RMS of sqrt(exp_avg_sq), i.e. sqrt(mean(exp_avg_sq))
    // The last update Adam applied, weight decay aside: lr * m_hat / (sqrt(v_hat) + eps) with
    // m_hat = exp_avg / (1 - beta1^step) and v_hat = exp_avg_sq / (1 - beta2^step) (max_exp_avg_sq
    // with amsgrad). Its RMS over the elements, and the share of elements where sqrt(v_hat) <= eps.
    // Empty when the state or the group lacks a figure the formula needs.
    std::optional<double> updateRms;
    std::optional<double> epsilonDominatedShare;
    int64_t nonfinite = 0; // NaN and Inf elements of the moment tensors
};

struct OptimizerGroup
{
    std::optional<double> lr, eps, beta1, beta2, weightDecay;
    std::vector<int64_t> parameterIndices;
};

struct OptimizerStateSummary
{
    std::string path;
    // Adam, AdamW and their kin (an exp_avg_sq in the state). When false the moments above stay
    // empty and a note names the state keys found instead ("momentum_buffer": SGD).
    bool isAdam = false;
    // True when every parameter has its model name (see readOptimizerState).
    bool namesMapped = false;
    std::vector<OptimizerGroup> groups;
    std::vector<OptimizerParameterState> parameters; // in the optimizer's index order
    std::vector<std::string> warnings, notes; // each naming the file
};

// `parametersInOrder`: the model's trainable parameters in registration order, as a pickled
// state_dict (pytorch_model.bin, a Lightning state_dict) lists them; not in a safetensors file's
// name order (CheckpointSeries::parametersInModelOrder says which a series has). Names are matched
// when the counts and every shape agree, in one of two layouts: the param_groups in turn follow
// the model order (a plain `Adam(model.parameters())`), or the Hugging Face Trainer's two groups,
// weights with decay first and then biases and norm weights (1-D tensors). Otherwise parameters
// are named "param #i [shape]" and a note says why.
Result<OptimizerStateSummary> readOptimizerState(
    const std::string& path, const std::vector<ModelParameter>& parametersInOrder);

// The same with names alone: without shapes to check against, names are matched only for a single
// param group whose size equals the model's parameter count.
Result<OptimizerStateSummary> readOptimizerState(
    const std::string& path, const std::vector<std::string>& parameterNamesInOrder);

} // namespace nanscope
