#pragma once

// Reads the tensors of checkpoint files without running anything from them: torch.save zip
// archives (state_dicts, training checkpoints, plain tensors), TorchScript archives
// (torch.jit.save), torch.export archives (torch.export.save: its weights and constants, by the
// module's names) and safetensors files. Pickled data is decoded by the project's own restricted
// unpickler (PickleReader.h), which accepts only the opcodes and globals torch.save emits for
// tensors and containers; TorchScript code in an archive is never loaded.
//
// Plain C++: no LibTorch here, so the CLI, the GUI and the tests can use it freely.

#include "core/Result.h"
#include "core/checkpoint/PickledValue.h"
#include "core/tensor/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nanscope {

enum class CheckpointFormat { StateDict, TorchScript, Safetensors, Tensor, ExportedProgram };
const char* checkpointFormatName(CheckpointFormat format); // "state_dict", "torchscript", ...

struct Checkpoint
{
    std::string path;
    CheckpointFormat format = CheckpointFormat::StateDict;
    std::vector<NamedTensor> tensors; // in file order
};

// Every tensor of a torch.save, TorchScript or safetensors file, found by content, not by extension.
Result<Checkpoint> readCheckpoint(const std::string& path);

// The object tree of a torch.save zip archive (or of a TorchScript archive's data.pkl): a batch file
// is a dict {"inputs": Tensor, "targets": Tensor, "loss": str, "step": int}.
Result<PickledValue> readPickledFile(const std::string& path);

// Every tensor in a tree, named by its key path joined with '.' ("model.features.0.weight"); list
// items are named by index. A lone tensor is named `rootName`.
std::vector<NamedTensor> collectTensors(const PickledValue& root, const std::string& rootName = "tensor");

} // namespace nanscope
