#pragma once

// Internal to core/torch: the statistics of a LibTorch tensor by the one statistics kernel
// (core/tensor/TensorStats), and the value ranges /activations, /inputs and /buffers log from them.

#include "core/tensor/TensorStats.h"

#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <vector>

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

// A strided tensor's elements as runs of contiguous ones, read in place: the innermost dims whose
// strides make one contiguous stretch, repeated over the outer dims. A replay meets such tensors at
// every other op (a head split by transpose, a third of a fused q-k-v projection, a transposed
// gradient); a contiguous copy of each cost a replay about as much as its statistics.
struct ElementRuns
{
    int64_t elements = 0; // per run
    int64_t count = 0;
    std::vector<int64_t> outerSizes, outerStrides; // in elements
};

// Runs shorter than this are copied instead: a loop over runs of a few elements would be slower.
inline constexpr int64_t kShortestRun = 64;

inline std::optional<ElementRuns> elementRunsOf(const torch::Tensor& values)
{
    const int64_t dims = values.dim();
    ElementRuns runs;
    runs.elements = 1;
    int64_t d = dims - 1;
    for (; d >= 0 && (values.size(d) == 1 || values.stride(d) == runs.elements); --d)
        runs.elements *= values.size(d);
    if (runs.elements < kShortestRun)
        return std::nullopt;
    runs.count = 1;
    for (; d >= 0; --d) {
        if (values.stride(d) == 0 && values.size(d) > 1)
            return std::nullopt; // an expanded dim: left to the copy (rare among a replay's values)
        runs.outerSizes.insert(runs.outerSizes.begin(), values.size(d));
        runs.outerStrides.insert(runs.outerStrides.begin(), values.stride(d));
        runs.count *= values.size(d);
    }
    return runs;
}

// One pass of the fused kernel over the tensor's elements, on a CPU copy when the tensor lives on
// a device, and as float64 for dtypes the kernel does not read (complex, quantised). A strided CPU
// tensor is read in place: a permutation of a dense block (a transpose) as that block, a slice as
// its runs of contiguous elements; only what neither fits (an expanded or finely strided view) is
// copied.
inline TensorStats tensorStats(const torch::Tensor& tensor, const std::string& name = "")
{
    torch::NoGradGuard noGrad;
    torch::Tensor values = tensor.detach();
    if (!values.is_cpu())
        values = values.cpu();
    if (!kernelDtype(values.scalar_type()))
        values = values.to(torch::kDouble);
    const DType dtype = *kernelDtype(values.scalar_type());
    if (!values.is_contiguous() && values.numel() > 0) {
        if (values.is_non_overlapping_and_dense()) // its elements fill [data_ptr, data_ptr + numel)
            return computeContiguousStats(name, static_cast<const uint8_t*>(values.data_ptr()), dtype,
                                          values.sizes().vec(), 0, 1);
        if (const std::optional<ElementRuns> runs = elementRunsOf(values)) {
            const auto* base = static_cast<const uint8_t*>(values.data_ptr());
            const int64_t itemSize = int64_t(values.element_size());
            return computeRunStats(name, dtype, values.sizes().vec(), runs->elements, runs->count, [&](int64_t run) {
                int64_t offset = 0;
                for (size_t k = runs->outerSizes.size(); k-- > 0;) {
                    offset += (run % runs->outerSizes[k]) * runs->outerStrides[k];
                    run /= runs->outerSizes[k];
                }
                return base + offset * itemSize;
            });
        }
    }
    values = values.contiguous();
    return computeContiguousStats(name, static_cast<const uint8_t*>(values.data_ptr()), dtype, values.sizes().vec(), 0, 1);
}

// A statistic as the run file's float32 columns store it (/activations, /inputs, /buffers): NaN
// where the kernel has none, because no element is finite.
inline float runFileFigure(const std::optional<double>& value)
{
    return value ? float(*value) : NAN;
}

} // namespace nanscope::torchutil
