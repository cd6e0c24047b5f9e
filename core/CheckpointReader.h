#pragma once

// Reads the tensors of checkpoint files without running anything from them: torch.save zip
// archives (state_dicts, training checkpoints, plain tensors), TorchScript archives
// (torch.jit.save) and safetensors files. Pickled data is decoded by the project's own restricted
// unpickler (PickleReader.h), which accepts only the opcodes and globals torch.save emits for
// tensors and containers; TorchScript code in an archive is never loaded.
//
// Plain C++: no LibTorch here, so the CLI, the GUI and the tests can use it freely.

#include "Result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nanscope {

enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };

const char* dtypeName(DType dtype); // "float32", "bfloat16", ... as PyTorch names them
size_t dtypeSize(DType dtype);
bool isFloatingPoint(DType dtype);

// The raw little-endian bytes of one storage, shared by every tensor that views it, as torch.save
// shares one storage between a tensor and its views.
using StorageBytes = std::shared_ptr<const std::vector<uint8_t>>;

// A strided view into a storage, exactly as torch.save describes it. Shape, strides and offset are
// validated against the storage's size when the file is read, so every index they produce is in range.
struct TensorView
{
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides; // in elements
    int64_t storageOffset = 0;    // in elements
    StorageBytes storage;
    std::string location; // where the tensor lived when saved: "cpu", "cuda:0"

    int64_t numel() const;
    bool isContiguous() const;
    // The first element when the view is contiguous, else nullptr.
    const uint8_t* contiguousData() const;
    // The elements in row-major order (a copy for a strided view).
    std::vector<uint8_t> contiguousBytes() const;
};

// A value of an unpickled object tree: an IValue-like variant that is all the checkpoint and
// batch files of a training run hold. Tuples are lists with isTuple set. Objects are TorchScript
// module objects (`__torch__.*` classes): a class name and attributes, never code.
struct PickledValue
{
    enum class Kind { None, Bool, Int, Double, String, Tensor, List, Dict, Object };

    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0.0;
    std::string text;                   // String: the string; Object: the class name
    std::shared_ptr<const TensorView> tensor;
    std::vector<PickledValue> items;    // List
    bool isTuple = false;
    std::vector<std::pair<PickledValue, PickledValue>> entries; // Dict (in file order); Object attributes

    bool isNone() const { return kind == Kind::None; }
    bool isTensor() const { return kind == Kind::Tensor; }
    // The entry under a string key of a Dict or an attribute of an Object; nullptr if absent.
    const PickledValue* find(const std::string& key) const;
};

enum class CheckpointFormat { StateDict, TorchScript, Safetensors, Tensor };
const char* checkpointFormatName(CheckpointFormat format); // "state_dict", "torchscript", ...

struct NamedTensor
{
    std::string name; // the state_dict key, prefixed by the key path in nested checkpoints
    TensorView tensor;
};

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
