#pragma once

// Which vector instructions the hot loops may use, decided once at run time so that one binary
// runs everywhere: the statistics kernel (core/tensor/TensorStats), HDF5's chunk checksum
// (core/run/Fletcher32), the scan's vanishing tally (core/scan/VanishingRule) and the TFRecord
// CRC-32C (core/importers/Crc32c). NANSCOPE_NO_AVX2=1 forces the baseline x86-64 code of the AVX2
// loops and NANSCOPE_NO_AVX512=1 the AVX2 code of the AVX-512 ones, so tests and bug reports can
// compare the builds.

#include <cpuid.h>

#include <cstdlib>

namespace nanscope::cpu {

inline bool hasAvx2()
{
    static const bool yes = !std::getenv("NANSCOPE_NO_AVX2") && __builtin_cpu_supports("avx2");
    return yes;
}

// F16C, read from CPUID: clang's __builtin_cpu_supports does not know the name (the fuzz build).
inline bool hasF16c()
{
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// AVX2 with FMA and F16C (the statistics kernel's float16 and fused multiply-adds).
inline bool hasAvx2FmaF16c()
{
    static const bool yes = hasAvx2() && __builtin_cpu_supports("fma") && hasF16c();
    return yes;
}

// The AVX-512 subsets the statistics kernel uses, beside AVX2, FMA and F16C.
inline bool hasAvx512()
{
    static const bool yes = hasAvx2FmaF16c() && !std::getenv("NANSCOPE_NO_AVX512") &&
                            __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    return yes;
}

// SSE4.2's crc32 instruction.
inline bool hasSse42()
{
    static const bool yes = __builtin_cpu_supports("sse4.2");
    return yes;
}

} // namespace nanscope::cpu
