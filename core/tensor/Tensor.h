#pragma once

// The tensor as nanscope reads it from files: a dtype, a strided view and the raw bytes of its
// storage. Plain C++ (no LibTorch), shared by the checkpoint readers, the statistics kernel and replay.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };

const char* dtypeName(DType dtype); // "float32", "bfloat16", ... as PyTorch names them
std::optional<DType> dtypeFromName(const std::string& name); // the inverse of dtypeName
// "[64, 3, 3, 3]": how every command, view and report writes a shape.
std::string shapeText(const std::vector<int64_t>& shape);
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

struct NamedTensor
{
    std::string name; // the state_dict key, prefixed by the key path in nested checkpoints
    TensorView tensor;
};

// The elements of a view in row-major order: the storage itself when the view is contiguous, else
// a copy made into `copy`.
const uint8_t* contiguousElements(const TensorView& tensor, std::vector<uint8_t>& copy);

// Element access for other analyses (diff, spectral norm): every element converted to double,
// row-major.
std::vector<double> tensorToDoubles(const TensorView& tensor);

} // namespace nanscope
