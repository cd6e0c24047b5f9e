#pragma once

// Where a training tool put a checkpoint's weights, and their tensors as a model's state_dict.
// Used by the checkpoint series (CheckpointSeries.h), the run finder (OpenRun), the optimizer's
// parameter names (OptimizerState) and the window's checkpoint loader: which file of a Trainer's
// checkpoint-N/ folder holds the weights is judged here alone. Plain C++ plus Qt Core for the shard
// index JSON.

#include "core/Result.h"
#include "core/tensor/Tensor.h"

#include <string>
#include <vector>

namespace nanscope {

struct CheckpointFiles
{
    // The files to read, in order: a single model file, or every shard of a sharded one, then a
    // PEFT adapter when the folder holds one.
    std::vector<std::string> files;
    // What was skipped or assumed about the folder ("pytorch_model.bin skipped; the safetensors
    // files hold the same weights").
    std::vector<std::string> notes;
};

// The model files of one checkpoint. A file is itself. A Hugging Face `checkpoint-N` folder gives
// model.safetensors, else the shards its model.safetensors.index.json lists, else
// pytorch_model.bin or its shards, else shards found by name without an index; adapter_model.*
// comes last. Fails naming the folder when it holds none, or when an index names a shard that is
// missing or outside the folder.
Result<CheckpointFiles> findCheckpointFiles(const std::string& checkpointPath);

// True for a file name a Hugging Face Trainer writes a checkpoint's weights under
// (model.safetensors, pytorch_model.bin, adapter_model.safetensors, adapter_model.bin).
bool isTrainerWeightsFileName(const std::string& fileName);

// The one file that stands for a checkpoint-N/ folder: the full model's single file, safetensors
// before the pickled form, else the PEFT adapter's; empty when the model is sharded or absent.
std::string trainerWeightsFile(const std::string& folder);

// Whether findCheckpointFiles would find weights in `folder` (a single file, an index, shards by
// name or an adapter), judged by the names alone: a folder may hold only an optimizer.
bool holdsTrainerWeights(const std::string& folder);

// The files that name the parameters an optimizer of this checkpoint trained: a PEFT adapter alone
// when there is one (its optimizer holds only the adapter), else the full model; of each, the form
// that keeps the model's order (a pickled state_dict) before safetensors, which sorts by name.
Result<CheckpointFiles> findTrainedParameterFiles(const std::string& folder);

struct ModelTensors
{
    std::vector<NamedTensor> tensors;
    // True for a pickled state_dict (an OrderedDict in the model's registration order); false for
    // safetensors, which stores tensors sorted by dtype and name.
    bool inModelOrder = true;
    // A Lightning checkpoint's tensors outside its state_dict (optimizer_states, callbacks): read
    // with the file, then dropped.
    size_t droppedOutsideStateDict = 0;
};

// The model tensors of one file: every tensor of a state_dict, safetensors or TorchScript file;
// for a Lightning checkpoint only its `state_dict`, named without the "state_dict." prefix.
Result<ModelTensors> readModelTensors(const std::string& path);

} // namespace nanscope
