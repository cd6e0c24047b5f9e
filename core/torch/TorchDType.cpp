#include "core/torch/TorchDType.h"

#include <map>
#include <stdexcept>

namespace nanscope::torchdtype {

c10::ScalarType scalarTypeOf(DType dtype)
{
    switch (dtype) {
    case DType::Float32: return torch::kFloat32;
    case DType::Float64: return torch::kFloat64;
    case DType::Float16: return torch::kFloat16;
    case DType::BFloat16: return torch::kBFloat16;
    case DType::Int64: return torch::kInt64;
    case DType::Int32: return torch::kInt32;
    case DType::Int16: return torch::kInt16;
    case DType::Int8: return torch::kInt8;
    case DType::UInt8: return torch::kUInt8;
    case DType::Bool: return torch::kBool;
    }
    return torch::kFloat32;
}

std::optional<DType> dtypeOf(c10::ScalarType type)
{
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                    DType::Int16, DType::Int8, DType::UInt8, DType::Bool})
        if (scalarTypeOf(d) == type)
            return d;
    return std::nullopt;
}

std::string nameOf(c10::ScalarType type)
{
    if (auto dtype = dtypeOf(type))
        return dtypeName(*dtype);
    return c10::toString(type);
}

c10::ScalarType floatTypeNamed(const std::string& name)
{
    // torch.half, torch.float and torch.double as Python spells them, beside dtypeName's own names.
    static const std::map<std::string, DType> aliases{
        {"half", DType::Float16}, {"float", DType::Float32}, {"double", DType::Float64}};
    const auto alias = aliases.find(name);
    const std::optional<DType> dtype = alias != aliases.end() ? alias->second : dtypeFromName(name);
    if (dtype && (*dtype == DType::Float16 || *dtype == DType::BFloat16 || *dtype == DType::Float32 ||
                  *dtype == DType::Float64))
        return scalarTypeOf(*dtype);
    throw std::invalid_argument("unknown dtype '" + name + "' (float16, bfloat16, float32 or float64)");
}

std::string describe(const torch::Tensor& tensor)
{
    std::string text = nameOf(tensor.scalar_type()) + " [";
    for (int64_t d = 0; d < tensor.dim(); ++d)
        text += (d ? ", " : "") + std::to_string(tensor.size(d));
    return text + "]";
}

} // namespace nanscope::torchdtype
