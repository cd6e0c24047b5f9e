#pragma once

// Internal to core/tensor: the statistics kernel of TensorStats.cpp, included by that file alone
// (with StatsLanes.h, its lanes and centre): its blocks and sources stay in one translation unit,
// built with -O3 and cloned for AVX2, so that the compiler inlines them into each clone.

#include "core/tensor/StatsLanes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// The fused CPU pass. Each block of kBlock elements is read once: sum of deviations from the
// running mean and of their squares (on values scaled by a power of two), min, max and the
// smallest magnitude, in 32-byte vectors (64-byte in the AVX-512 build). Blocks are combined in
// double with Chan's formula, so large tensors keep full accuracy while the inner loop stays in the
// tensor's own precision. Rare blocks (NaN, Inf, overflow, zeros or subnormals) take an extra
// L1-resident read; one with NaN, Inf or overflow is swept again in pieces of 512, and only the
// piece that holds the value takes the careful path. Memory is asked for a few KB ahead of the
// read. bfloat16 is widened as it is read; float16 through an L1 buffer. Large tensors are summed
// in fixed chunks spread over threads, and a checkpoint's many smaller tensors are spread over
// threads one tensor each.
// TensorStats.cpp is built with -O3; on x86-64 the kernel is also compiled for AVX2 + FMA and for
// AVX-512, and picked at run time by CPU feature (not by CPU model).

namespace nanscope {

namespace {

// Where a block's values come from. The kernel's fast path reads through `load` and `at`; the
// rare careful paths want plain floats and ask `values` for them.
template<typename F>
struct DirectSource // float32 or float64 as stored, or values already converted into an L1 buffer
{
    const F* p;
    bool streaming; // `p` is the tensor's memory, not an L1 copy: ask for memory ahead
    template<typename V>
    NANSCOPE_ALWAYS_INLINE V load(int i) const { return loadVector<V>(p + i); }
    NANSCOPE_ALWAYS_INLINE F at(int k) const { return p[k]; }
    NANSCOPE_ALWAYS_INLINE void prefetch(int i) const
    {
        if (streaming)
            prefetchAhead(p + i);
    }
    NANSCOPE_ALWAYS_INLINE const F* values(F*, int) const { return p; }
    NANSCOPE_ALWAYS_INLINE DirectSource advanced(int k) const { return {p + k, streaming}; }
};

// bfloat16 is the top half of a float32: the fast path reads it raw (sweepBFloat16); `at` and
// `values` widen single values and whole blocks for the tails and the careful paths.
struct BFloat16Source
{
    const AliasU16* p;
    NANSCOPE_ALWAYS_INLINE float at(int k) const { return bfloat16ToFloat(p[k]); }
    NANSCOPE_ALWAYS_INLINE const float* values(float* scratch, int n) const
    {
        for (int k = 0; k < n; ++k)
            scratch[k] = at(k);
        return scratch;
    }
    NANSCOPE_ALWAYS_INLINE BFloat16Source advanced(int k) const { return {p + k}; }
};

struct BlockSweep
{
    int done; // elements swept; the rest (fewer than a step) are left to the caller
    double d, q, low, high, least;
};

// Running sums of (x * scale - shift) and of their squares, min and max, fed two vectors at a
// time. Each kind is reduced as a tree within a step, so the running sums see one addition a step
// and their latency never limits the loop. `kScaled` false: the scale is 1 and no multiply is
// spent on it.
template<typename F, bool kScaled, int kBytes>
struct PairMoments
{
    using V = typename Lanes<F, kBytes>::V;
    static constexpr int W = Lanes<F, kBytes>::kWidth;
    V vScale, vShift;
    V sum = {}, squares = {};
    V lo = splat<V>(std::numeric_limits<F>::infinity()), hi = splat<V>(-std::numeric_limits<F>::infinity());

    PairMoments(F scale, F shift) : vScale(splat<V>(scale)), vShift(splat<V>(shift)) {}

    NANSCOPE_ALWAYS_INLINE void add(const V& a, const V& b)
    {
        const V ta = kScaled ? a * vScale - vShift : a - vShift;
        const V tb = kScaled ? b * vScale - vShift : b - vShift;
        sum += ta + tb;
        squares += ta * ta + tb * tb;
        const V lab = a < b ? a : b, hab = a > b ? a : b;
        lo = lab < lo ? lab : lo;
        hi = hab > hi ? hab : hi;
    }

    // Lanes are read from copies: subscripting the vectors themselves made GCC keep a running sum
    // in memory for the whole loop.
    NANSCOPE_ALWAYS_INLINE void finish(double& d, double& q, double& low, double& high) const
    {
        F sums[W], sq[W], lows[W], highs[W];
        std::memcpy(sums, &sum, sizeof sums);
        std::memcpy(sq, &squares, sizeof sq);
        std::memcpy(lows, &lo, sizeof lows);
        std::memcpy(highs, &hi, sizeof highs);
        for (int j = 0; j < W; ++j) {
            d += double(sums[j]);
            q += double(sq[j]);
            low = std::min(low, double(lows[j]));
            high = std::max(high, double(highs[j]));
        }
    }
};

// The hot loop of a block: PairMoments and the smallest magnitude, two vectors (one cache line of
// 32-byte vectors, two of 64-byte ones) a step. Few enough live vectors for AVX2's 16 registers:
// several running sums of each kind spill to the stack and run at a quarter of the speed of the
// memory they read.
template<typename F, bool kScaled, int kBytes, typename Source>
NANSCOPE_ALWAYS_INLINE BlockSweep sweepBlock(const Source& source, int n, F scale, F shift)
{
    using V = typename Lanes<F, kBytes>::V;
    constexpr int W = Lanes<F, kBytes>::kWidth;
    constexpr int kPerLine = kCacheLine / int(sizeof(F));
    constexpr F inf = std::numeric_limits<F>::infinity();
    PairMoments<F, kScaled, kBytes> moments(scale, shift);
    V smallest = splat<V>(inf);
    int i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        for (int line = 0; line < 2 * W; line += kPerLine)
            source.prefetch(i + line);
        const V a = source.template load<V>(i), b = source.template load<V>(i + W);
        moments.add(a, b);
        const V ma = magnitudeOf<F, kBytes>(a), mb = magnitudeOf<F, kBytes>(b);
        const V mab = ma < mb ? ma : mb;
        smallest = mab < smallest ? mab : smallest;
    }
    BlockSweep sweep{i, 0, 0, double(inf), -double(inf), double(inf)};
    moments.finish(sweep.d, sweep.q, sweep.low, sweep.high);
    F least[W];
    std::memcpy(least, &smallest, sizeof least);
    sweep.least = double(*std::min_element(least, least + W));
    return sweep;
}

template<int kBytes>
struct RawBFloat16;
template<>
struct RawBFloat16<32>
{
    typedef uint16_t V __attribute__((vector_size(32)));
};
template<>
struct RawBFloat16<64>
{
    typedef uint16_t V __attribute__((vector_size(64)));
};

// The lanes of a raw bfloat16 vector, interleaved with zeros into the top halves of float32
// lanes: the low (kHigh false) or high four 16-bit lanes of each 16-byte group, the order of x86's
// unpack instructions. The order of values changes, which sums and extremes do not mind.
template<bool kHigh, typename Raw16>
NANSCOPE_ALWAYS_INLINE typename Lanes<float, sizeof(Raw16)>::V widenBFloat16(const Raw16& raw)
{
    using V = typename Lanes<float, sizeof(Raw16)>::V;
    const Raw16 zero = {};
    constexpr int h = kHigh ? 4 : 0;
    if constexpr (sizeof(Raw16) == 32)
        return reinterpret_cast<V>(__builtin_shufflevector(zero, raw, 0, 16 + h, 1, 17 + h, 2, 18 + h, 3, 19 + h, //
                                                           8, 24 + h, 9, 25 + h, 10, 26 + h, 11, 27 + h));
    else
        return reinterpret_cast<V>(__builtin_shufflevector(zero, raw, 0, 32 + h, 1, 33 + h, 2, 34 + h, 3, 35 + h, //
                                                           8, 40 + h, 9, 41 + h, 10, 42 + h, 11, 43 + h,          //
                                                           16, 48 + h, 17, 49 + h, 18, 50 + h, 19, 51 + h,        //
                                                           24, 56 + h, 25, 57 + h, 26, 58 + h, 27, 59 + h));
}

// sweepBlock for bfloat16, read as raw 16-bit lanes: one load holds twice as many values as a
// float32 vector, widened by interleaving with zeros (the bfloat16 bits become the top half of
// each float32), and the smallest magnitude is an integer min on the raw bits. About a quarter
// fewer instructions per value than widening one float32 vector at a time, which had left a
// single thread at 71-85% of a plain sum's bandwidth.
template<bool kScaled, int kBytes>
NANSCOPE_ALWAYS_INLINE BlockSweep sweepBFloat16(const AliasU16* p, int n, float scale, float shift)
{
    using Raw16 = typename RawBFloat16<kBytes>::V;
    constexpr int kValues = kBytes / 2; // a step
    constexpr float inf = std::numeric_limits<float>::infinity();
    const Raw16 magnitudeBits = Raw16{} + uint16_t(0x7fff);
    PairMoments<float, kScaled, kBytes> moments(scale, shift);
    Raw16 smallest = magnitudeBits;
    int i = 0;
    for (; i + 2 * kValues <= n; i += 2 * kValues) {
        for (int line = 0; line < 2 * kValues; line += kCacheLine / 2)
            prefetchAhead(p + i + line);
        Raw16 raw0, raw1;
        std::memcpy(&raw0, p + i, sizeof raw0);
        std::memcpy(&raw1, p + i + kValues, sizeof raw1);
        moments.add(widenBFloat16<false>(raw0), widenBFloat16<true>(raw0));
        moments.add(widenBFloat16<false>(raw1), widenBFloat16<true>(raw1));
        const Raw16 m0 = raw0 & magnitudeBits, m1 = raw1 & magnitudeBits;
        const Raw16 m01 = m0 < m1 ? m0 : m1;
        smallest = m01 < smallest ? m01 : smallest;
    }
    BlockSweep sweep{i, 0, 0, double(inf), -double(inf), double(inf)};
    moments.finish(sweep.d, sweep.q, sweep.low, sweep.high);
    uint16_t least[kValues];
    std::memcpy(least, &smallest, sizeof least);
    if (i > 0)
        sweep.least = double(bfloat16ToFloat(*std::min_element(least, least + kValues)));
    return sweep;
}

template<typename F, bool kScaled, int kBytes, typename Source>
NANSCOPE_ALWAYS_INLINE BlockSweep sweepAny(const Source& source, int n, F scale, F shift)
{
    if constexpr (std::is_same_v<Source, BFloat16Source>)
        return sweepBFloat16<kScaled, kBytes>(source.p, n, scale, shift);
    else
        return sweepBlock<F, kScaled, kBytes>(source, n, scale, shift);
}

// Zeros, subnormals and the smallest nonzero magnitude of a block whose smallest magnitude is
// below normal: a second, L1-resident read, rare outside integer tensors. NaN and Inf count as
// neither and never win the minimum.
template<typename F>
NANSCOPE_ALWAYS_INLINE void countZerosAndSubnormals(const F* p, int n, F minNormal, Moments& acc)
{
    using V = typename Lanes<F>::V;
    using Mask = typename Lanes<F>::Mask;
    constexpr int W = Lanes<F>::kWidth;
    constexpr F inf = std::numeric_limits<F>::infinity();
    const V vZero = {}, vTiny = splat<V>(minNormal);
    Mask zero = {}, tiny = {};
    V nonzeroLeast = splat<V>(inf);
    int k = 0;
    for (; k + W <= n; k += W) {
        const V a = loadVector<V>(p + k);
        const Mask isZero = a == vZero;
        zero -= isZero;
        const V magnitude = magnitudeOf<F>(a);
        tiny -= magnitude < vTiny;
        const V candidate = isZero ? splat<V>(inf) : magnitude;
        nonzeroLeast = candidate < nonzeroLeast ? candidate : nonzeroLeast;
    }
    int64_t zeros = 0, tinies = 0;
    double nonzero = double(inf);
    for (int j = 0; j < W; ++j) {
        zeros += zero[j];
        tinies += tiny[j];
        nonzero = std::min(nonzero, double(nonzeroLeast[j]));
    }
    for (; k < n; ++k) {
        zeros += p[k] == F(0);
        tinies += std::fabs(p[k]) < minNormal;
        if (p[k] != F(0) && std::fabs(p[k]) <= std::numeric_limits<F>::max())
            nonzero = std::min(nonzero, double(std::fabs(p[k])));
    }
    acc.zero += zeros;
    acc.subnormal += tinies - zeros;
    acc.smallestNonzero = std::min(acc.smallestNonzero, nonzero);
}

// The mean of a block's finite values, summed in double lanes: the careful path's rough centre
// when the running one cannot serve (an overflow of the plain sum may be why the block is there).
template<typename F>
NANSCOPE_ALWAYS_INLINE double finiteMean(const F* p, int n, int64_t count)
{
    using V = typename Lanes<F>::V;
    using Mask = typename Lanes<F>::Mask;
    using Wide = typename Lanes<double>::V;
    constexpr int W = Lanes<F>::kWidth;
    constexpr int kWide = Lanes<double>::kWidth;
    const V vBig = splat<V>(std::numeric_limits<F>::max()), vZero = {};
    Wide wideSum = {};
    int i = 0;
    for (; i + W <= n; i += W) {
        const V a = loadVector<V>(p + i);
        const Mask finite = magnitudeOf<F>(a) <= vBig;
        const V kept = finite ? a : vZero;
        for (int j = 0; j < W; j += kWide) { // widen W lanes into double lanes
            Wide part;
            for (int k = 0; k < kWide; ++k)
                part[k] = double(kept[j + k]);
            wideSum += part;
        }
    }
    double total = 0;
    for (int j = 0; j < kWide; ++j)
        total += wideSum[j];
    for (; i < n; ++i)
        if (std::fabs(p[i]) <= std::numeric_limits<F>::max())
            total += double(p[i]);
    return total / double(count);
}

// One block in one read. Deviations from the running centre and their squares are summed on
// values scaled by a power of two (exact): squares of float32 values near 1e-30 or 1e30 neither
// underflow nor overflow, and the shift keeps the sum of squares free of cancellation. No
// per-element select: a NaN never wins a `<` comparison, and any NaN or Inf (or an overflow)
// makes the sums non-finite, which sends the rare block that holds one down the careful path.
// Zeros and subnormals are counted only in blocks whose smallest magnitude is below normal.
// `scratch`: room for a block of F, for sources that must be converted for the careful paths.
// `kBytes`: the vector width of the fast sweep, 32 or 64. The careful paths stay on 32-byte
// vectors: GCC 12 made the 64-byte build of their masked selects ten times slower.
// `kWholeBlock`: false for the pieces of a block that failed the fast path.
// The careful path: NaN, +-Inf, or a sum that overflowed. One vector read of the L1-resident
// block counts what the fast path could not and sums the finite values' deviations from the
// running centre, as the fast path does (scalar counting and two more reads here would make a
// block with one NaN cost ten clean ones). Only a block whose centred sums overflow again,
// or a range's first block with no centre yet, takes the two-read route of blockDeviations.
template<typename F>
NANSCOPE_ALWAYS_INLINE void carefulBlock(const F* p, int n, F minNormal, Moments& acc, Centre& centre)
{
    using V = typename Lanes<F>::V;
    using Mask = typename Lanes<F>::Mask;
    constexpr int W = Lanes<F>::kWidth;
    constexpr F big = std::numeric_limits<F>::max();
    constexpr F inf = std::numeric_limits<F>::infinity();
    const V vZero = {};

    const F scale = centre.valid ? F(std::ldexp(1.0, centre.exponent)) : F(1);
    const F shift = centre.valid ? F(centre.shift) * scale : F(0);
    const V vBig = splat<V>(big), vInf = splat<V>(inf), vScale = splat<V>(scale), vShift = splat<V>(shift);
    V low2 = splat<V>(inf), high2 = splat<V>(-inf), smallest = splat<V>(inf), sums = {}, squares = {};
    Mask finiteCount = {}, nanCount = {}, posinfCount = {};
    int i = 0;
    for (; i + W <= n; i += W) {
        const V a = loadVector<V>(p + i);
        const V magnitude = magnitudeOf<F>(a);
        const Mask finite = magnitude <= vBig;
        const V t = finite ? a * vScale - vShift : vZero;
        sums += t;
        squares += t * t;
        low2 = finite ? (a < low2 ? a : low2) : low2;
        high2 = finite ? (a > high2 ? a : high2) : high2;
        smallest = magnitude < smallest ? magnitude : smallest; // NaN fails the compare, Inf never wins
        finiteCount -= finite;
        nanCount -= a != a;
        posinfCount -= a == vInf;
    }
    int64_t count = 0, nans = 0, posinfs = 0;
    double d = 0, q = 0, low = double(inf), high = -double(inf), least = double(inf);
    for (int j = 0; j < W; ++j) {
        d += double(sums[j]);
        q += double(squares[j]);
        low = std::min(low, double(low2[j]));
        high = std::max(high, double(high2[j]));
        least = std::min(least, double(smallest[j]));
        count += finiteCount[j];
        nans += nanCount[j];
        posinfs += posinfCount[j];
    }
    for (; i < n; ++i) {
        const F v = p[i];
        if (std::fabs(v) <= big) {
            ++count;
            const double t = double(v * scale - shift);
            d += t;
            q += t * t;
            low = std::min(low, double(v));
            high = std::max(high, double(v));
            least = std::min(least, double(std::fabs(v)));
        } else if (std::isnan(v)) {
            ++nans;
        } else if (v > 0) {
            ++posinfs;
        }
    }
    // As on the fast path: the smallest magnitude is the smallest nonzero one unless it is below
    // normal, and only then are zeros and subnormals counted, in a second read.
    if (least > 0 && std::isfinite(least))
        acc.smallestNonzero = std::min(acc.smallestNonzero, least);
    if (least < double(minNormal))
        countZerosAndSubnormals(p, n, minNormal, acc);
    acc.nan += nans;
    acc.posinf += posinfs;
    acc.neginf += (n - count) - nans - posinfs;
    if (count == 0)
        return;
    acc.min = std::min(acc.min, low);
    acc.max = std::max(acc.max, high);
    const double largest = std::max(std::fabs(low), std::fabs(high));
    const double unscale = 1.0 / double(scale);
    const double blockMean = double(shift) * unscale + d * unscale / double(count);
    if (centre.valid && std::isfinite(d) && std::isfinite(q)
        && !(largest > 0 && std::ilogb(largest) + centre.exponent < -kRescaleExponent))
        acc.addMoments(count, blockMean, std::max(0.0, q - d * d / double(count)) * unscale * unscale);
    else // no centre yet, an overflow of the centred sums, or squares that may have flushed to zero
        blockDeviations<F, true>(p, n, count, finiteMean(p, n, count), low, high, acc);
    updateCentre<F>(acc, centre);
}

// The range's first block: the centre from its first finite values.
template<typename F, typename Source>
NANSCOPE_ALWAYS_INLINE void centreOnFirstValues(const Source& source, int n, Centre& centre)
{
    constexpr F big = std::numeric_limits<F>::max();
    Moments probe;
    for (int k = 0; k < std::min(n, 64); ++k) {
        const F v = source.at(k);
        if (std::fabs(v) <= big) {
            probe.addMoments(1, double(v), 0.0);
            probe.min = std::min(probe.min, double(v));
            probe.max = std::max(probe.max, double(v));
        }
    }
    updateCentre<F>(probe, centre);
}

// The fast path of a block with a centre: one sweep, the moments added to `acc`. False when the
// sums went non-finite (a NaN, an Inf, an overflow), and nothing was added.
template<int kBytes, typename F, typename Source>
NANSCOPE_ALWAYS_INLINE bool fastBlock(const Source& source, int n, F minNormal, F* scratch, Moments& acc, Centre& centre)
{
    const F scale = F(std::ldexp(1.0, centre.exponent));
    const F shift = F(centre.shift) * scale;
    // Scaling by a power of two only matters near the ends of the exponent range. With the
    // largest magnitude within 2^±20, the smallest deviation float32 resolves (2^-24 of it)
    // squares to far above the smallest normal, and a block's sum of squares stays far below
    // the largest float: the common case skips the multiply.
    constexpr int kSafeExponent = 20;
    const bool scaled = std::abs(centre.exponent) > kSafeExponent;
    const F usedScale = scaled ? scale : F(1), usedShift = scaled ? shift : F(centre.shift);
    const BlockSweep sweep = scaled ? sweepAny<F, true, kBytes>(source, n, usedScale, usedShift)
                                    : sweepAny<F, false, kBytes>(source, n, usedScale, usedShift);
    const int i = sweep.done;
    double d = sweep.d, q = sweep.q, low = sweep.low, high = sweep.high, least = sweep.least;
    for (int k = i; k < n; ++k) {
        const F v = source.at(k);
        const double t = double(v * usedScale - usedShift);
        d += t;
        q += t * t;
        low = v < low ? double(v) : low;
        high = v > high ? double(v) : high;
        least = std::fabs(v) < least ? double(std::fabs(v)) : least;
    }
    if (std::isfinite(d) && std::isfinite(q) && std::isfinite(low) && std::isfinite(high)) {
        // A block without a zero has its smallest nonzero magnitude already: `least`. One
        // with zeros finds it in the second read it takes for them anyway.
        if (least > 0)
            acc.smallestNonzero = std::min(acc.smallestNonzero, least);
        if (least < double(minNormal)) { // rare outside integer tensors: count in a second, L1-resident read
            countZerosAndSubnormals(source.values(scratch, n), n, minNormal, acc);
        }
        const double unscale = 1.0 / double(usedScale);
        const double blockMean = double(usedShift) * unscale + d * unscale / double(n);
        acc.min = std::min(acc.min, low);
        acc.max = std::max(acc.max, high);
        // A block far smaller than the centre's scale (the first block of a tensor that
        // starts with zeros, say) may have had its squares flush to zero: sum them again,
        // scaled for this block. Rare, and the block is still in L1.
        const double largest = std::max(std::fabs(low), std::fabs(high));
        if (largest > 0 && std::ilogb(largest) + std::ilogb(double(usedScale)) < -kRescaleExponent)
            // Centred inside the block: at the old scale its mean may have cancelled away.
            blockDeviations<F, false>(source.values(scratch, n), n, n, std::clamp(blockMean, low, high), low, high, acc);
        else
            acc.addMoments(n, blockMean, std::max(0.0, q - d * d / double(n)) * unscale * unscale);
        updateCentre<F>(acc, centre);
        return true;
    }
    return false;
}

// One block in one read. Deviations from the running centre and their squares are summed on
// values scaled by a power of two (exact): squares of float32 values near 1e-30 or 1e30 neither
// underflow nor overflow, and the shift keeps the sum of squares free of cancellation. No
// per-element select: a NaN never wins a `<` comparison, and any NaN or Inf (or an overflow)
// makes the sums non-finite, which sends the rare block that holds one down the careful path.
// Zeros and subnormals are counted only in blocks whose smallest magnitude is below normal.
// `scratch`: room for a block of F, for sources that must be converted for the careful paths.
// `kBytes`: the vector width of the fast sweep, 32 or 64. The careful paths stay on 32-byte
// vectors: GCC 12 made the 64-byte build of their masked selects ten times slower.
// `kWholeBlock`: false for the pieces of a block that failed the fast path.
template<int kBytes, bool kWholeBlock = true, typename F, typename Source>
NANSCOPE_ALWAYS_INLINE void blockKernel(const Source& source, int n, F minNormal, F* scratch, Moments& acc, Centre& centre)
{
    if (!centre.valid)
        centreOnFirstValues<F>(source, n, centre);
    if (centre.valid && fastBlock<kBytes>(source, n, minNormal, scratch, acc, centre))
        return;
    // A whole block failed the fast path, most often for a single NaN or Inf. Its values are in
    // L1 now: sweep it again in small pieces, so that only the piece that holds the value takes
    // the careful path (about eight times a fast piece's cost). Careful whole blocks made one
    // NaN in 100,000 values cost a bfloat16 tensor a quarter of its speed.
    if (kWholeBlock && n > kCarefulPiece) {
        for (int start = 0; start < n; start += kCarefulPiece)
            blockKernel<kBytes, false>(source.advanced(start), std::min(kCarefulPiece, n - start), minNormal, scratch, acc, centre);
        return;
    }
    carefulBlock(source.values(scratch, n), n, minNormal, acc, centre);
}

// Widens a block of float16 into an L1 buffer, a cache line at a time, asking for memory ahead
// as the kernel does on float32.
NANSCOPE_ALWAYS_INLINE void widenFloat16(const AliasU16* source, int n, float* out)
{
    constexpr int kPerLine = kCacheLine / 2;
    int i = 0;
    for (; i + kPerLine <= n; i += kPerLine) {
        prefetchAhead(source + i);
        for (int j = 0; j < kPerLine; ++j)
            out[i + j] = halfToFloat(source[i + j]);
    }
    for (; i < n; ++i)
        out[i] = halfToFloat(source[i]);
}

} // namespace

} // namespace nanscope
