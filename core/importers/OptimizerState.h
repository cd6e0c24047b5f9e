#pragma once

// What an Adam-family optimizer's saved state says about each parameter: the size of its moments,
// the update it last applied, and how much of it epsilon dominates (sqrt(v_hat) <= eps: the
// gradient's second moment has fallen below eps, so Adam's step there is no longer normalised).
// Read from a Hugging Face `optimizer.pt` (torch.save of an optimizer state_dict) or a Lightning
// `.ckpt` (its optimizer_states[0]) by core's safe unpickler; plain C++ over the tensor bytes.

#include "core/Result.h"
#include "core/checkpoint/OptimizerStateSummary.h"
#include "core/scan/EpsilonDomination.h"
#include "core/tensor/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {


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


struct OptimizerThresholds
{
    double epsilonDominatedShare = kEpsilonDominatedShare; // at least this share with sqrt(v_hat) <= eps
    // A gradient that jumps k-fold against a steady history gives an update of about
    // (0.9 + 0.1 k) / sqrt(0.999 + 0.001 k^2) lr with the default betas: 1.5 lr is a jump of ~6x.
    double updateToLrAbove = 1.5;
    double updateToLrBelow = 0.01;
};

// Short findings for one parameter, each saying what it means for training: non-finite moments
// ("3 NaN/Inf in exp_avg_sq: the next step writes NaN into the weights"), epsilon domination
// above the threshold, and an update far from lr.
std::vector<std::string> optimizerFlags(
    const OptimizerParameterState& parameter, const OptimizerGroup& group, const OptimizerThresholds& thresholds = {});

// The model's trainable parameters as an optimizer lists them, from a pickled state_dict's tensors
// in file (= registration) order: the floating-point tensors other than BatchNorm running
// statistics, which are buffers the optimizer never sees; a tensor tied to an earlier one (the same
// storage, offset and shape: `lm_head.weight` sharing the embedding) once, as model.parameters()
// yields it. A Lightning checkpoint's tensors ("state_dict.<name>") give their state_dict alone,
// named without the prefix.
std::vector<ModelParameter> modelParametersOf(const std::vector<NamedTensor>& tensors);

struct ModelParametersFound
{
    std::vector<ModelParameter> parameters; // empty when none could be read in the model's order
    std::string source; // the file(s) read, for "names from ..."
    std::vector<std::string> notes; // why there are none, or what was assumed
};

// The parameters to name an optimizer state by, from a model file or a checkpoint folder. A folder
// is searched as a Hugging Face checkpoint: an adapter (adapter_model.bin) when it holds one, since
// PEFT trains the adapter alone; else pytorch_model.bin, its shards, or the other files
// findCheckpointFiles lists. Only pickled state_dicts keep the model's order: a safetensors file
// sorts its tensors by name, so it is not read and a note says so. Never fails; a note says why
// nothing was found.
ModelParametersFound findModelParameters(const std::string& modelFileOrFolder);

} // namespace nanscope
