#pragma once

// Reading one element of a tensor's raw bytes: float16 and bfloat16 widened exactly (NaN, Inf and
// subnormals included), integers converted to double. Inline, for the statistics kernel's hot loops
// and for the plain element access of other analyses alike.

#include "core/tensor/Tensor.h"

#include <cstdint>
#include <cstring>

#define NANSCOPE_ELEMENT_INLINE __attribute__((always_inline)) inline

namespace nanscope {

template<typename T>
NANSCOPE_ELEMENT_INLINE T loadAs(const uint8_t* p)
{
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

NANSCOPE_ELEMENT_INLINE float halfToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f;
    const uint32_t mantissa = h & 0x3ff;
    const uint32_t normal = sign | ((exponent + 112) << 23) | (mantissa << 13);
    const uint32_t special = sign | 0x7f800000 | (mantissa << 13);
    const float tiny = float(mantissa) * 5.9604644775390625e-8f; // subnormal: mantissa * 2^-24
    uint32_t tinyBits;
    std::memcpy(&tinyBits, &tiny, 4);
    tinyBits |= sign;
    const uint32_t bits = exponent == 0 ? tinyBits : (exponent == 31 ? special : normal);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

NANSCOPE_ELEMENT_INLINE float bfloat16ToFloat(uint16_t h)
{
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Converts elements [begin, begin + n) of a contiguous buffer to double.
NANSCOPE_ELEMENT_INLINE void integersToDouble(const uint8_t* data, DType dtype, int64_t begin, int n, double* out)
{
    switch (dtype) {
    case DType::Int64: for (int i = 0; i < n; ++i) out[i] = double(loadAs<int64_t>(data + (begin + i) * 8)); break;
    case DType::Int32: for (int i = 0; i < n; ++i) out[i] = double(loadAs<int32_t>(data + (begin + i) * 4)); break;
    case DType::Int16: for (int i = 0; i < n; ++i) out[i] = double(loadAs<int16_t>(data + (begin + i) * 2)); break;
    case DType::Int8: for (int i = 0; i < n; ++i) out[i] = double(int8_t(data[begin + i])); break;
    case DType::UInt8:
    case DType::Bool: for (int i = 0; i < n; ++i) out[i] = double(data[begin + i]); break;
    default: break;
    }
}

inline double elementAsDouble(const uint8_t* data, DType dtype, int64_t i)
{
    switch (dtype) {
    case DType::Float32: return loadAs<float>(data + i * 4);
    case DType::Float64: return loadAs<double>(data + i * 8);
    case DType::Float16: return halfToFloat(loadAs<uint16_t>(data + i * 2));
    case DType::BFloat16: return bfloat16ToFloat(loadAs<uint16_t>(data + i * 2));
    default: {
        double d = 0;
        integersToDouble(data, dtype, i, 1, &d);
        return d;
    }
    }
}

} // namespace nanscope
