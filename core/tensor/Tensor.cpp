#include "core/tensor/Tensor.h"

#include <cstring>
#include <stdexcept>

namespace nanscope {

const char* dtypeName(DType dtype)
{
    switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Int16: return "int16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    }
    return "?";
}

size_t dtypeSize(DType dtype)
{
    switch (dtype) {
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16: return 2;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool: return 1;
    }
    return 1;
}

bool isFloatingPoint(DType dtype)
{
    return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

int64_t TensorView::numel() const
{
    int64_t n = 1;
    for (int64_t extent : shape)
        n *= extent; // validated when read: cannot overflow
    return n;
}

bool TensorView::isContiguous() const
{
    int64_t expected = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (shape[d] != 1 && strides[d] != expected)
            return false;
        expected *= shape[d];
    }
    return true;
}

const uint8_t* TensorView::contiguousData() const
{
    if (!storage || !isContiguous())
        return nullptr;
    return storage->data() + storageOffset * int64_t(dtypeSize(dtype));
}

std::vector<uint8_t> TensorView::contiguousBytes() const
{
    const size_t item = dtypeSize(dtype);
    const int64_t count = numel();
    std::vector<uint8_t> out(size_t(count) * item);
    if (count == 0)
        return out;
    if (const uint8_t* p = contiguousData()) {
        std::memcpy(out.data(), p, out.size());
        return out;
    }
    // Walk the index space like an odometer; the innermost dimension is copied element by element.
    std::vector<int64_t> index(shape.size(), 0);
    int64_t offset = storageOffset;
    for (int64_t i = 0; i < count; ++i) {
        std::memcpy(out.data() + size_t(i) * item, storage->data() + size_t(offset) * item, item);
        for (size_t d = shape.size(); d-- > 0;) {
            if (++index[d] < shape[d]) {
                offset += strides[d];
                break;
            }
            offset -= strides[d] * (shape[d] - 1);
            index[d] = 0;
        }
    }
    return out;
}

} // namespace nanscope
