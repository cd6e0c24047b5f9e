#pragma once

// Internal to core/tensor, part of the statistics kernel (StatsKernel.h, included by TensorStats.cpp
// alone): the vector lanes and loads, a block's moments, the running centre the sums are taken
// around, and the two-read deviations of the rare blocks.

#include "core/tensor/ElementConversion.h"
#include "core/tensor/Moments.h"
#include "core/tensor/TensorStats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#define NANSCOPE_HAVE_AVX2_CLONE 1
#endif
#define NANSCOPE_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace nanscope {

namespace {

constexpr int kBlock = 4096; // 16 KB of float32: stays in L1 between the two reads
// The pieces a block that failed the fast path is swept again in (see blockKernel): a multiple of
// every fast sweep's step, small enough that the careful path's share is small.
constexpr int kCarefulPiece = 512;
// How far ahead of the read the kernel asks for memory, a cache line at a time. The hardware
// prefetcher alone left a single thread at about 60% of a plain sum's bandwidth: the kernel's
// arithmetic per cache line keeps too few loads in flight. 1 KB to 8 KB ahead all measured 85-100%
// on the 2-core EPYC machine of the bench; 4 KB is in the middle.
constexpr int kPrefetchBytes = 4096;
constexpr int kCacheLine = 64;
// A block whose largest magnitude, times the scale it was summed at, lies below 2^-this is
// summed again at its own scale (see blockKernel).
constexpr int kRescaleExponent = 30;

NANSCOPE_ALWAYS_INLINE void prefetchAhead(const void* p)
{
    __builtin_prefetch(static_cast<const char*>(p) + kPrefetchBytes);
}
constexpr int64_t kElementsPerThread = kStatsElementsPerThread;

typedef float __attribute__((may_alias)) AliasFloat;
typedef double __attribute__((may_alias)) AliasDouble;
typedef uint16_t __attribute__((may_alias)) AliasU16;

struct Moments
{
    int64_t count = 0; // finite elements
    double mean = 0, m2 = 0;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    int64_t nan = 0, posinf = 0, neginf = 0, zero = 0, subnormal = 0;
    double smallestNonzero = std::numeric_limits<double>::infinity(); // over the finite elements

    void addMoments(int64_t n, double blockMean, double blockM2)
    {
        const MomentSums sum = combineMoments({count, mean, m2}, {n, blockMean, blockM2});
        count = sum.count;
        mean = sum.mean;
        m2 = sum.m2;
    }
    void merge(const Moments& o)
    {
        addMoments(o.count, o.mean, o.m2);
        min = std::min(min, o.min);
        max = std::max(max, o.max);
        nan += o.nan;
        posinf += o.posinf;
        neginf += o.neginf;
        zero += o.zero;
        subnormal += o.subnormal;
        smallestNonzero = std::min(smallestNonzero, o.smallestNonzero);
    }
};

// 32-byte vectors in GCC's vector extension: one AVX register, or two SSE registers in the
// baseline build. The hot sweeps also come in 64 bytes, one AVX-512 register, for that build. Explicit vectors because the compiler may not reorder a floating-point sum on
// its own, and its automatic vectorisation of this kernel spills and shuffles.
template<typename F, int kBytes = 32>
struct Lanes;
// Spelled out per width: GCC 12 does not take a vector_size that depends on a template parameter.
#define NANSCOPE_LANES(F, I, BYTES)                                                                \
    template<>                                                                                     \
    struct Lanes<F, BYTES>                                                                         \
    {                                                                                              \
        typedef F V __attribute__((vector_size(BYTES)));                                           \
        typedef I Mask __attribute__((vector_size(BYTES)));                                        \
        static constexpr int kWidth = BYTES / int(sizeof(F));                                      \
    };
NANSCOPE_LANES(float, int32_t, 32)
NANSCOPE_LANES(float, int32_t, 64)
NANSCOPE_LANES(double, int64_t, 32)
NANSCOPE_LANES(double, int64_t, 64)
#undef NANSCOPE_LANES

// |v| lane by lane: the sign bits cleared.
template<typename F, int kBytes = 32>
NANSCOPE_ALWAYS_INLINE typename Lanes<F, kBytes>::V magnitudeOf(const typename Lanes<F, kBytes>::V& v)
{
    using Mask = typename Lanes<F, kBytes>::Mask;
    using Lane = typename std::remove_reference<decltype(Mask{}[0])>::type;
    return reinterpret_cast<typename Lanes<F, kBytes>::V>(reinterpret_cast<Mask>(v) & (Mask{} + std::numeric_limits<Lane>::max()));
}

template<typename V>
NANSCOPE_ALWAYS_INLINE V loadVector(const void* p)
{
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template<typename V>
NANSCOPE_ALWAYS_INLINE V splat(typename std::remove_reference<decltype(V{}[0])>::type x)
{
    return V{} + x;
}

// Pass two of a block: sums of the deviations from a rough mean and of their squares, on values
// scaled by a power of two (exact) so that the block's largest magnitude is about 1. So squares of
// float32 values near 1e-30 or 1e30 neither underflow nor overflow, and the shift keeps the sum
// of squares free of cancellation. `kSkipNonFinite` only on the rare blocks that hold NaN or Inf.
template<typename F, bool kSkipNonFinite>
NANSCOPE_ALWAYS_INLINE void blockDeviations(const F* p, int n, int64_t count, double roughMean, double low, double high,
                                            Moments& acc)
{
    using V = typename Lanes<F>::V;
    constexpr int W = Lanes<F>::kWidth;
    constexpr F big = std::numeric_limits<F>::max();
    const double largest = std::max(std::fabs(low), std::fabs(high));
    const int exponent = largest > 0 ? std::clamp(-std::ilogb(largest), std::numeric_limits<F>::min_exponent - 1,
                                                  std::numeric_limits<F>::max_exponent - 1)
                                     : 0;
    const F scale = F(std::ldexp(1.0, exponent)); // a normal number of type F
    if (!std::isfinite(roughMean)) // the block's sum overflowed: any value inside the range will do
        roughMean = low / 2 + high / 2;
    const F shift = F(roughMean) * scale;

    const V vScale = splat<V>(scale), vShift = splat<V>(shift), vBig = splat<V>(big), vZero = {};
    V d0 = {}, d1 = {}, q0 = {}, q1 = {};
    int i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const V a = loadVector<V>(p + i);
        const V b = loadVector<V>(p + i + W);
        V t0 = a * vScale - vShift;
        V t1 = b * vScale - vShift;
        if constexpr (kSkipNonFinite) {
            t0 = magnitudeOf<F>(a) <= vBig ? t0 : vZero;
            t1 = magnitudeOf<F>(b) <= vBig ? t1 : vZero;
        }
        d0 += t0;
        d1 += t1;
        q0 += t0 * t0;
        q1 += t1 * t1;
    }
    double d = 0, q = 0;
    const V dv = d0 + d1, qv = q0 + q1;
    for (int j = 0; j < W; ++j) {
        d += double(dv[j]);
        q += double(qv[j]);
    }
    for (; i < n; ++i) {
        const F v = p[i];
        if (kSkipNonFinite && !(std::fabs(v) <= big))
            continue;
        const double t = double(v * scale - shift);
        d += t;
        q += t * t;
    }
    const double unscale = 1.0 / double(scale);
    const double m2 = std::max(0.0, q - d * d / double(count)) * unscale * unscale;
    acc.addMoments(count, double(shift) * unscale + d * unscale / double(count), m2);
}

// Where the one-pass sums of a range of blocks are centred and scaled: the mean and the largest
// magnitude seen so far, so that the sums of squares neither cancel nor overflow.
struct Centre
{
    bool valid = false;
    double shift = 0;    // in the data's units
    int exponent = 0;    // the scale is 2^exponent
};

template<typename F>
NANSCOPE_ALWAYS_INLINE void updateCentre(const Moments& acc, Centre& centre)
{
    if (acc.count == 0)
        return;
    const double largest = std::max(std::fabs(acc.min), std::fabs(acc.max));
    centre.valid = true;
    // A mean below the data's resolution cancels nothing, and its rounding would only leak into
    // the figures (1, 2, -3 came out with a mean of 8e-17): centre on zero instead.
    centre.shift = std::fabs(acc.mean) < largest * double(std::numeric_limits<F>::epsilon()) ? 0.0 : acc.mean;
    centre.exponent = largest > 0 ? std::clamp(-std::ilogb(largest), std::numeric_limits<F>::min_exponent - 1,
                                               std::numeric_limits<F>::max_exponent - 1)
                                  : 0;
}

} // namespace

} // namespace nanscope
