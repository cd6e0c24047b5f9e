#pragma once

// Where a training tool put a checkpoint's weights, and their tensors as a model's state_dict.
// Used by the checkpoint series (CheckpointSeries.h); plain C++ plus Qt Core for the shard index
// JSON.

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
