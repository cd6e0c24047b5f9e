// The statistics of a tensor: the kernel (StatsKernel.h: lanes, blocks, widening) chosen by CPU
// feature, the split of a large tensor over threads, and the API of TensorStats.h.
#include "core/tensor/TensorStats.h"

#include "core/CpuFeatures.h"
#include "core/tensor/SpreadOverCores.h"
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

// `kBytes`: the vector width of the kernel's fast sweeps, 32 (baseline, AVX2) or 64 (AVX-512).
template<int kBytes>
NANSCOPE_ALWAYS_INLINE void rangeMomentsBody(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    float floats[kBlock];
    double doubles[kBlock];
    Centre centre;
    for (int64_t start = begin; start < end; start += kBlock) {
        const int n = int(std::min<int64_t>(kBlock, end - start));
        switch (dtype) {
        case DType::Float32:
            blockKernel<kBytes>(DirectSource<float>{reinterpret_cast<const AliasFloat*>(data) + start, true}, n, FLT_MIN, floats,
                        acc, centre);
            break;
        case DType::Float64:
            blockKernel<kBytes>(DirectSource<double>{reinterpret_cast<const AliasDouble*>(data) + start, true}, n, DBL_MIN,
                        doubles, acc, centre);
            break;
        case DType::Float16:
            widenFloat16(reinterpret_cast<const AliasU16*>(data) + start, n, floats);
            blockKernel<kBytes>(DirectSource<float>{floats, false}, n, 6.103515625e-05f, floats, acc, centre); // 2^-14, float16's smallest normal
            break;
        case DType::BFloat16: // shares float32's exponent range
            blockKernel<kBytes>(BFloat16Source{reinterpret_cast<const AliasU16*>(data) + start}, n, FLT_MIN, floats, acc, centre);
            break;
        default:
            integersToDouble(data, dtype, start, n, doubles);
            blockKernel<kBytes>(DirectSource<double>{doubles, false}, n, 0.5, doubles, acc, centre); // integers: "below 0.5" is exactly zero, so no subnormals
            break;
        }
    }
}

void rangeMomentsBaseline(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    rangeMomentsBody<32>(data, dtype, begin, end, acc);
}

#ifdef NANSCOPE_HAVE_AVX2_CLONE
__attribute__((target("avx2,fma,f16c"))) void rangeMomentsAvx2(const uint8_t* data, DType dtype, int64_t begin,
                                                                int64_t end, Moments& acc)
{
    rangeMomentsBody<32>(data, dtype, begin, end, acc);
}

// The same kernel on 64-byte vectors: half the instructions per value of the AVX2 build. On the
// bench's EPYC, the float32 and bfloat16 sweeps of the AVX2 build were bound by instructions, not
// by memory (bfloat16 gained nothing from a second thread).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))) void
rangeMomentsAvx512(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    rangeMomentsBody<64>(data, dtype, begin, end, acc);
}
#endif

// Chosen by CPU feature at run time, so one binary runs everywhere and uses AVX2 where it exists.
void rangeMoments(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
#ifdef NANSCOPE_HAVE_AVX2_CLONE
    // NANSCOPE_NO_AVX2=1 forces the baseline build of the kernel, NANSCOPE_NO_AVX512=1 the AVX2
    // build, so tests can check each (core/CpuFeatures.h).
    if (cpu::hasAvx512())
        return rangeMomentsAvx512(data, dtype, begin, end, acc);
    if (cpu::hasAvx2FmaF16c())
        return rangeMomentsAvx2(data, dtype, begin, end, acc);
#endif
    rangeMomentsBaseline(data, dtype, begin, end, acc);
}

// A tensor is summed in chunks of whole blocks, each from a fresh centre into its own slot, and
// the chunks are merged in order: the figures are the same bits on one thread or many, whichever
// thread ran which chunk. 256 blocks (1 M elements) keep the chunk's first-block probe and merge
// negligible while leaving several chunks per thread, so a helper that starts late does less.
constexpr int64_t kChunkElements = int64_t(256) * kBlock;

Moments contiguousMoments(const uint8_t* data, DType dtype, int64_t numel, int maxThreads)
{
    const int64_t allowed = maxThreads > 0 ? maxThreads : std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(allowed, numel / kElementsPerThread));
    const int64_t chunks = (numel + kChunkElements - 1) / kChunkElements;
    if (chunks <= 1) { // most tensors of a checkpoint or a step: no slots, no threads
        Moments m;
        rangeMoments(data, dtype, 0, numel, m);
        return m;
    }
    std::vector<Moments> parts(static_cast<size_t>(chunks));
    std::atomic<int64_t> nextChunk{0};
    spreadOverCores(int(threads), [&] {
        for (int64_t k = nextChunk++; k < chunks; k = nextChunk++)
            rangeMoments(data, dtype, k * kChunkElements, std::min(numel, (k + 1) * kChunkElements), parts[size_t(k)]);
    });
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

namespace {

TensorStats emptyStats(const std::string& name, DType dtype, const std::vector<int64_t>& shape)
{
    TensorStats s;
    s.name = name;
    s.shape = shape;
    s.dtype = dtype;
    s.numel = 1;
    for (int64_t extent : shape)
        s.numel *= extent;
    return s;
}

// The figures of a tensor from the moments of all its elements.
void fillFromMoments(TensorStats& s, const Moments& m)
{
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
}

} // namespace

TensorStats computeContiguousStats(const std::string& name, const uint8_t* data, DType dtype,
                                   const std::vector<int64_t>& shape, int histogramBins, int threads)
{
    TensorStats s = emptyStats(name, dtype, shape);
    if (s.numel == 0 || !data)
        return s;
    const Moments m = contiguousMoments(data, dtype, s.numel, threads);
    fillFromMoments(s, m);
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

TensorStats computeRunStats(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            int64_t runElements, int64_t runCount,
                            const std::function<const uint8_t*(int64_t run)>& runStart)
{
    TensorStats s = emptyStats(name, dtype, shape);
    if (s.numel == 0 || runElements <= 0 || runCount <= 0)
        return s;
    // The runs are gathered into a buffer that stays in cache and summed a buffer at a time, into
    // one accumulator: the kernel's setup per call would cost more than a short run's elements.
    const int64_t itemSize = int64_t(dtypeSize(dtype));
    const int64_t runBytes = runElements * itemSize;
    const int64_t runsPerBuffer = std::max<int64_t>(1, (int64_t(16) * kBlock) / runElements);
    std::vector<uint8_t> buffer(size_t(std::min(runsPerBuffer, runCount) * runBytes));
    Moments m;
    for (int64_t first = 0; first < runCount; first += runsPerBuffer) {
        const int64_t runs = std::min(runsPerBuffer, runCount - first);
        for (int64_t k = 0; k < runs; ++k)
            std::memcpy(buffer.data() + k * runBytes, runStart(first + k), size_t(runBytes));
        rangeMoments(buffer.data(), dtype, 0, runs * runElements, m);
    }
    fillFromMoments(s, m);
    return s;
}

} // namespace nanscope
