#pragma once

// Internal to core/torch (includes LibTorch): the one mapping between the project's DType
// (core/tensor, named as PyTorch names them) and LibTorch's ScalarType.

#include "core/tensor/Tensor.h"

#include <torch/torch.h>

#include <optional>
#include <string>

namespace nanscope::torchdtype {

c10::ScalarType scalarTypeOf(DType dtype);
std::optional<DType> dtypeOf(c10::ScalarType type);

// Python's names, as the user wrote the batch: "float32", not LibTorch's "Float".
std::string nameOf(c10::ScalarType type);

// The floating-point type a replay runs in ("float32", "float16", "half", ...); throws
// std::invalid_argument for any other name.
c10::ScalarType floatTypeNamed(const std::string& name);

// "float32 [4, 5]"
std::string describe(const torch::Tensor& tensor);

} // namespace nanscope::torchdtype
