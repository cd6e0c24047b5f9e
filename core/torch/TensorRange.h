#pragma once

// Internal to core/torch: the statistics of a LibTorch tensor by the one statistics kernel
// (core/tensor/TensorStats), and the value ranges /activations, /inputs and /buffers log from them.

#include "core/tensor/TensorStats.h"

#include <torch/torch.h>

#include <cmath>
#include <optional>

namespace nanscope::torchutil {

// The kernel's DType for a LibTorch dtype it reads in place; empty for the others.
inline std::optional<DType> kernelDtype(c10::ScalarType type)
{
    switch (type) {
    case torch::kFloat: return DType::Float32;
    case torch::kDouble: return DType::Float64;
    case torch::kHalf: return DType::Float16;
    case torch::kBFloat16: return DType::BFloat16;
    case torch::kLong: return DType::Int64;
    case torch::kInt: return DType::Int32;
    case torch::kShort: return DType::Int16;
    case torch::kChar: return DType::Int8;
    case torch::kByte: return DType::UInt8;
    case torch::kBool: return DType::Bool;
    default: return std::nullopt;
    }
}

// One pass of the fused kernel over the tensor's elements, on a CPU copy when the tensor lives on
// a device, and as float64 for dtypes the kernel does not read (complex, quantised).
inline TensorStats tensorStats(const torch::Tensor& tensor, const std::string& name = "")
{
    torch::NoGradGuard noGrad;
    torch::Tensor values = tensor.detach();
    if (!values.is_cpu())
        values = values.cpu();
    if (!kernelDtype(values.scalar_type()))
        values = values.to(torch::kDouble);
    values = values.contiguous();
    return computeContiguousStats(name, static_cast<const uint8_t*>(values.data_ptr()), *kernelDtype(values.scalar_type()),
                                  values.sizes().vec(), 0, 1);
}

// A statistic as the run file's float32 columns store it (/activations, /inputs, /buffers): NaN
// where the kernel has none, because no element is finite.
inline float runFileFigure(const std::optional<double>& value)
{
    return value ? float(*value) : NAN;
}

} // namespace nanscope::torchutil
