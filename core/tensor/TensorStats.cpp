// The statistics of a tensor: the kernel (StatsKernel.h: lanes, blocks, widening) chosen by CPU
// feature, the split of a large tensor over threads, and the API of TensorStats.h.
#include "core/tensor/TensorStats.h"

#include "core/tensor/StatsKernel.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

namespace nanscope {

namespace {

NANSCOPE_ALWAYS_INLINE void rangeMomentsBody(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    float floats[kBlock];
    double doubles[kBlock];
    Centre centre;
    for (int64_t start = begin; start < end; start += kBlock) {
        const int n = int(std::min<int64_t>(kBlock, end - start));
        switch (dtype) {
        case DType::Float32:
            blockKernel(DirectSource<float>{reinterpret_cast<const AliasFloat*>(data) + start, true}, n, FLT_MIN, floats,
                        acc, centre);
            break;
        case DType::Float64:
            blockKernel(DirectSource<double>{reinterpret_cast<const AliasDouble*>(data) + start, true}, n, DBL_MIN,
                        doubles, acc, centre);
            break;
        case DType::Float16:
            widenFloat16(reinterpret_cast<const AliasU16*>(data) + start, n, floats);
            blockKernel(DirectSource<float>{floats, false}, n, 6.103515625e-05f, floats, acc, centre); // 2^-14, float16's smallest normal
            break;
        case DType::BFloat16: // shares float32's exponent range
            blockKernel(BFloat16Source{reinterpret_cast<const AliasU16*>(data) + start}, n, FLT_MIN, floats, acc, centre);
            break;
        default:
            integersToDouble(data, dtype, start, n, doubles);
            blockKernel(DirectSource<double>{doubles, false}, n, 0.5, doubles, acc, centre); // integers: "below 0.5" is exactly zero, so no subnormals
            break;
        }
    }
}

void rangeMomentsBaseline(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    rangeMomentsBody(data, dtype, begin, end, acc);
}

#ifdef NANSCOPE_HAVE_AVX2_CLONE
__attribute__((target("avx2,fma,f16c"))) void rangeMomentsAvx2(const uint8_t* data, DType dtype, int64_t begin,
                                                                int64_t end, Moments& acc)
{
    rangeMomentsBody(data, dtype, begin, end, acc);
}
#endif

// Chosen by CPU feature at run time, so one binary runs everywhere and uses AVX2 where it exists.
void rangeMoments(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
#ifdef NANSCOPE_HAVE_AVX2_CLONE
    // NANSCOPE_NO_AVX2=1 forces the baseline build of the kernel, so tests can check both.
    static const bool avx2 = !std::getenv("NANSCOPE_NO_AVX2") && __builtin_cpu_supports("avx2")
                             && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    if (avx2)
        return rangeMomentsAvx2(data, dtype, begin, end, acc);
#endif
    rangeMomentsBaseline(data, dtype, begin, end, acc);
}

Moments contiguousMoments(const uint8_t* data, DType dtype, int64_t numel, int maxThreads)
{
    const int64_t allowed = maxThreads > 0 ? maxThreads : std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t threads = std::min<int64_t>(allowed, numel / kElementsPerThread);
    if (threads <= 1) {
        Moments m;
        rangeMoments(data, dtype, 0, numel, m);
        return m;
    }
    // Chunks are whole blocks, so results do not depend on where the chunks start.
    const int64_t blocks = (numel + kBlock - 1) / kBlock;
    std::vector<Moments> parts(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int64_t t = 0; t < threads; ++t) {
        const int64_t begin = std::min(numel, blocks * t / threads * kBlock);
        const int64_t end = std::min(numel, blocks * (t + 1) / threads * kBlock);
        workers.emplace_back([=, &parts] { rangeMoments(data, dtype, begin, end, parts[size_t(t)]); });
    }
    for (auto& w : workers)
        w.join();
    Moments total;
    for (const auto& part : parts)
        total.merge(part);
    return total;
}

} // namespace

TensorStats computeTensorStats(const std::string& name, const TensorView& tensor, int histogramBins, int threads)
{
    std::vector<uint8_t> copy;
    const uint8_t* data = tensor.numel() > 0 ? contiguousElements(tensor, copy) : nullptr;
    return computeContiguousStats(name, data, tensor.dtype, tensor.shape, histogramBins, threads);
}

TensorStats computeContiguousStats(const std::string& name, const uint8_t* data, DType dtype,
                                   const std::vector<int64_t>& shape, int histogramBins, int threads)
{
    TensorStats s;
    s.name = name;
    s.shape = shape;
    s.dtype = dtype;
    s.numel = 1;
    for (int64_t extent : shape)
        s.numel *= extent;
    if (s.numel == 0 || !data)
        return s;
    const Moments m = contiguousMoments(data, dtype, s.numel, threads);
    s.nan = m.nan;
    s.posinf = m.posinf;
    s.neginf = m.neginf;
    s.zero = m.zero;
    s.subnormal = m.subnormal;
    if (m.count > 0) {
        s.min = m.min;
        s.max = m.max;
        s.mean = m.mean;
        s.std = m.count > 1 ? std::sqrt(m.m2 / double(m.count - 1)) : 0.0;
        s.norm = std::sqrt(m.m2 + double(m.count) * m.mean * m.mean);
        s.absmax = std::max(std::fabs(m.min), std::fabs(m.max));
        if (std::isfinite(m.smallestNonzero))
            s.nonzeroAbsmin = m.smallestNonzero;
    }
    if (histogramBins > 0 && m.count > 0) {
        s.histogram.assign(size_t(histogramBins), 0);
        const double width = (m.max - m.min) / histogramBins;
        for (int64_t i = 0; i < s.numel; ++i) {
            const double v = elementAsDouble(data, dtype, i);
            if (!std::isfinite(v))
                continue;
            int64_t bin = width > 0 ? int64_t((v - m.min) / width) : 0;
            s.histogram[size_t(std::clamp<int64_t>(bin, 0, histogramBins - 1))] += 1;
        }
    }
    return s;
}

} // namespace nanscope
