#include "TensorStats.h"

#include "torch/TorchTensorStats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

// The fused CPU pass. Each block of kBlock elements is read twice while it sits in L1: once for
// the counts, the sum, min and max, once for the squared deviations from the block's mean. Blocks
// are combined in double with Chan's formula, so large tensors keep full accuracy while the
// inner loops stay in the tensor's own precision and vectorise (explicit lanes: the compiler may
// not reorder a floating-point sum on its own). This file is built with -O3; on x86-64 the hot
// loop is also compiled for Haswell (AVX2, F16C, FMA) and picked at run time.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NANSCOPE_MULTIVERSION __attribute__((target_clones("default", "arch=haswell")))
#else
#define NANSCOPE_MULTIVERSION
#endif
#define NANSCOPE_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace nanscope {

namespace {

constexpr int kBlock = 2048;
constexpr int64_t kElementsPerThread = int64_t(1) << 21;

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

    void addMoments(int64_t n, double blockMean, double blockM2)
    {
        if (n == 0)
            return;
        if (count == 0) {
            count = n;
            mean = blockMean;
            m2 = blockM2;
            return;
        }
        const double total = double(count + n);
        const double delta = blockMean - mean;
        mean += delta * (double(n) / total);
        m2 += blockM2 + delta * delta * (double(count) * double(n) / total);
        count += n;
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
    }
};

template<typename F>
NANSCOPE_ALWAYS_INLINE void blockKernel(const F* p, int n, F minNormal, Moments& acc)
{
    constexpr int L = 64 / sizeof(F); // two AVX2 registers per accumulator
    using Count = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
    constexpr F big = std::numeric_limits<F>::max();
    constexpr F inf = std::numeric_limits<F>::infinity();

    F sum[L], lo[L], hi[L];
    Count nonfinite[L], zero[L], subnormal[L];
    for (int j = 0; j < L; ++j) {
        sum[j] = 0;
        lo[j] = inf;
        hi[j] = -inf;
        nonfinite[j] = zero[j] = subnormal[j] = 0;
    }
    const int whole = n - n % L;
    for (int i = 0; i < whole; i += L) {
        for (int j = 0; j < L; ++j) {
            const F v = p[i + j];
            const F a = std::fabs(v);
            const bool finite = a <= big; // false for NaN and +-Inf
            sum[j] += finite ? v : F(0);
            const F low = finite ? v : inf;
            const F high = finite ? v : -inf;
            lo[j] = low < lo[j] ? low : lo[j];
            hi[j] = high > hi[j] ? high : hi[j];
            nonfinite[j] += Count(!finite);
            zero[j] += Count(v == F(0));
            subnormal[j] += Count((a < minNormal) & (a != F(0)));
        }
    }
    for (int i = whole; i < n; ++i) {
        const F v = p[i];
        const F a = std::fabs(v);
        const bool finite = a <= big;
        if (finite) {
            sum[0] += v;
            lo[0] = std::min(lo[0], v);
            hi[0] = std::max(hi[0], v);
        }
        nonfinite[0] += Count(!finite);
        zero[0] += Count(v == F(0));
        subnormal[0] += Count((a < minNormal) & (a != F(0)));
    }
    double total = 0;
    int64_t bad = 0;
    for (int j = 0; j < L; ++j) {
        total += double(sum[j]); // may be +-Inf for float32 values near the type's limit: see below
        acc.min = std::min(acc.min, double(lo[j]));
        acc.max = std::max(acc.max, double(hi[j]));
        bad += nonfinite[j];
        acc.zero += zero[j];
        acc.subnormal += subnormal[j];
    }
    if (bad > 0) { // rare: tell NaN from +Inf and -Inf
        for (int i = 0; i < n; ++i) {
            const F v = p[i];
            if (std::isnan(v))
                ++acc.nan;
            else if (v == inf)
                ++acc.posinf;
            else if (v == -inf)
                ++acc.neginf;
        }
    }
    const int64_t count = n - bad;
    if (count == 0)
        return;

    // Pass two works on values scaled by a power of two (exact) so that the block's largest
    // magnitude is about 1: squares of float32 values near 1e-30 or 1e30 neither underflow nor
    // overflow. The shift (the block's rough mean) makes the sum of squares free of cancellation.
    double low = double(lo[0]), high = double(hi[0]);
    for (int j = 1; j < L; ++j) {
        low = std::min(low, double(lo[j]));
        high = std::max(high, double(hi[j]));
    }
    const double largest = std::max(std::fabs(low), std::fabs(high));
    const int exponent = largest > 0 ? std::clamp(-std::ilogb(largest), std::numeric_limits<F>::min_exponent - 1,
                                                  std::numeric_limits<F>::max_exponent - 1)
                                     : 0;
    const F scale = F(std::ldexp(1.0, exponent)); // a normal number of type F
    double roughMean = total / double(count);
    if (!std::isfinite(roughMean)) // the block's sum overflowed: any value inside the range will do
        roughMean = low / 2 + high / 2;
    const F shift = F(roughMean) * scale;
    F deviation[L], square[L];
    for (int j = 0; j < L; ++j)
        deviation[j] = square[j] = 0;
    for (int i = 0; i < whole; i += L) {
        for (int j = 0; j < L; ++j) {
            const F v = p[i + j];
            const F t = std::fabs(v) <= big ? v * scale - shift : F(0);
            deviation[j] += t;
            square[j] += t * t;
        }
    }
    for (int i = whole; i < n; ++i) {
        const F v = p[i];
        const F t = std::fabs(v) <= big ? v * scale - shift : F(0);
        deviation[0] += t;
        square[0] += t * t;
    }
    double d = 0, q = 0;
    for (int j = 0; j < L; ++j) {
        d += double(deviation[j]);
        q += double(square[j]);
    }
    const double unscale = 1.0 / double(scale);
    const double m2 = std::max(0.0, q - d * d / double(count)) * unscale * unscale;
    acc.addMoments(count, double(shift) * unscale + d * unscale / double(count), m2);
}

NANSCOPE_ALWAYS_INLINE float halfToFloat(uint16_t h)
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

NANSCOPE_ALWAYS_INLINE float bfloat16ToFloat(uint16_t h)
{
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

template<typename T>
NANSCOPE_ALWAYS_INLINE T loadAs(const uint8_t* p)
{
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// Converts elements [begin, begin + n) of a contiguous buffer to double.
NANSCOPE_ALWAYS_INLINE void integersToDouble(const uint8_t* data, DType dtype, int64_t begin, int n, double* out)
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

NANSCOPE_MULTIVERSION
void rangeMoments(const uint8_t* data, DType dtype, int64_t begin, int64_t end, Moments& acc)
{
    float floats[kBlock];
    double doubles[kBlock];
    for (int64_t start = begin; start < end; start += kBlock) {
        const int n = int(std::min<int64_t>(kBlock, end - start));
        switch (dtype) {
        case DType::Float32:
            blockKernel<float>(reinterpret_cast<const AliasFloat*>(data) + start, n, FLT_MIN, acc);
            break;
        case DType::Float64:
            blockKernel<double>(reinterpret_cast<const AliasDouble*>(data) + start, n, DBL_MIN, acc);
            break;
        case DType::Float16: {
            const AliasU16* h = reinterpret_cast<const AliasU16*>(data) + start;
            for (int i = 0; i < n; ++i)
                floats[i] = halfToFloat(h[i]);
            blockKernel<float>(floats, n, 6.103515625e-05f, acc); // 2^-14, float16's smallest normal
            break;
        }
        case DType::BFloat16: {
            const AliasU16* h = reinterpret_cast<const AliasU16*>(data) + start;
            for (int i = 0; i < n; ++i)
                floats[i] = bfloat16ToFloat(h[i]);
            blockKernel<float>(floats, n, FLT_MIN, acc); // bfloat16 shares float32's exponent range
            break;
        }
        default:
            integersToDouble(data, dtype, start, n, doubles);
            blockKernel<double>(doubles, n, 0.0, acc); // integers have no subnormals
            break;
        }
    }
}

Moments contiguousMoments(const uint8_t* data, DType dtype, int64_t numel)
{
    const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t threads = std::min<int64_t>(hardware, numel / kElementsPerThread);
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

double elementAsDouble(const uint8_t* data, DType dtype, int64_t i)
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

// The contiguous bytes of a view: the storage itself when possible, else a copy held in `copy`.
const uint8_t* contiguous(const TensorView& tensor, std::vector<uint8_t>& copy)
{
    if (const uint8_t* p = tensor.contiguousData())
        return p;
    copy = tensor.contiguousBytes();
    return copy.data();
}

} // namespace

std::vector<double> tensorToDoubles(const TensorView& tensor)
{
    std::vector<uint8_t> copy;
    const uint8_t* data = contiguous(tensor, copy);
    const int64_t n = tensor.numel();
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        out[size_t(i)] = elementAsDouble(data, tensor.dtype, i);
    return out;
}

TensorStats computeTensorStats(const std::string& name, const TensorView& tensor, int histogramBins)
{
    TensorStats s;
    s.name = name;
    s.shape = tensor.shape;
    s.dtype = tensor.dtype;
    s.numel = tensor.numel();
    if (s.numel == 0)
        return s;
    std::vector<uint8_t> copy;
    const uint8_t* data = contiguous(tensor, copy);
    const Moments m = contiguousMoments(data, tensor.dtype, s.numel);
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
    }
    if (histogramBins > 0 && m.count > 0) {
        s.histogram.assign(size_t(histogramBins), 0);
        const double width = (m.max - m.min) / histogramBins;
        for (int64_t i = 0; i < s.numel; ++i) {
            const double v = elementAsDouble(data, tensor.dtype, i);
            if (!std::isfinite(v))
                continue;
            int64_t bin = width > 0 ? int64_t((v - m.min) / width) : 0;
            s.histogram[size_t(std::clamp<int64_t>(bin, 0, histogramBins - 1))] += 1;
        }
    }
    return s;
}

std::optional<double> spectralNorm(const TensorView& tensor)
{
    if (!isFloatingPoint(tensor.dtype) || tensor.shape.size() < 2 || tensor.numel() == 0)
        return std::nullopt;
    const std::vector<double> w = tensorToDoubles(tensor);
    for (double v : w)
        if (!std::isfinite(v))
            return std::nullopt;
    const size_t rows = size_t(tensor.shape[0]);
    const size_t cols = w.size() / rows;
    // Power iteration on W^T W from a fixed, generic start vector.
    std::vector<double> v(cols), u(rows);
    for (size_t j = 0; j < cols; ++j)
        v[j] = 1.0 + 0.1 * double((j * 2654435761u) % 97) / 97.0;
    double sigma = 0;
    for (int iteration = 0; iteration < 100; ++iteration) {
        double uNorm = 0;
        for (size_t i = 0; i < rows; ++i) {
            double acc = 0;
            for (size_t j = 0; j < cols; ++j)
                acc += w[i * cols + j] * v[j];
            u[i] = acc;
            uNorm += acc * acc;
        }
        uNorm = std::sqrt(uNorm);
        if (uNorm == 0)
            return 0.0;
        for (double& x : u)
            x /= uNorm;
        std::fill(v.begin(), v.end(), 0.0);
        for (size_t i = 0; i < rows; ++i)
            for (size_t j = 0; j < cols; ++j)
                v[j] += w[i * cols + j] * u[i];
        double vNorm = 0;
        for (double x : v)
            vNorm += x * x;
        vNorm = std::sqrt(vNorm);
        if (vNorm == 0)
            return 0.0;
        for (double& x : v)
            x /= vNorm;
        const bool converged = std::fabs(vNorm - sigma) <= 1e-12 * vNorm;
        sigma = vNorm;
        if (converged)
            break;
    }
    return sigma;
}

bool cudaAvailable()
{
    return torchstats::cudaAvailable();
}

Result<std::vector<TensorStats>> computeCheckpointStats(const std::vector<NamedTensor>& tensors,
                                                        const StatsOptions& options)
{
    if (options.device == StatsDevice::Cuda && !cudaAvailable())
        return Error{"no CUDA device: LibTorch was built without CUDA or sees no GPU; use --device cpu"};
    std::vector<TensorStats> stats(tensors.size());
    std::vector<size_t> onTorch;
    const bool haveCuda = options.device == StatsDevice::Auto && cudaAvailable();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const bool useTorch = options.device == StatsDevice::Cuda || options.device == StatsDevice::TorchCpu
                              || (haveCuda && tensors[i].tensor.location.rfind("cuda", 0) == 0);
        if (useTorch)
            onTorch.push_back(i);
        else
            stats[i] = computeTensorStats(tensors[i].name, tensors[i].tensor, options.histogramBins);
    }
    if (!onTorch.empty()) {
        std::vector<const NamedTensor*> batch;
        for (size_t i : onTorch)
            batch.push_back(&tensors[i]);
        auto results = torchstats::computeWithTorch(batch, options.device != StatsDevice::TorchCpu);
        if (!results)
            return Error{results.error()};
        for (size_t k = 0; k < onTorch.size(); ++k) {
            stats[onTorch[k]] = std::move((*results)[k]);
            if (options.histogramBins > 0) // bins need min and max first; a second pass on the CPU
                stats[onTorch[k]].histogram
                    = computeTensorStats("", tensors[onTorch[k]].tensor, options.histogramBins).histogram;
        }
    }
    if (options.spectralNorm)
        for (size_t i = 0; i < tensors.size(); ++i)
            stats[i].spectralNorm = spectralNorm(tensors[i].tensor);
    return stats;
}

namespace {
std::string shortNumber(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}
} // namespace

std::vector<std::string> healthFlags(const TensorStats& s, const HealthThresholds& thresholds)
{
    std::vector<std::string> flags;
    if (s.nan)
        flags.push_back(std::to_string(s.nan) + " NaN");
    if (s.posinf)
        flags.push_back(std::to_string(s.posinf) + " +Inf");
    if (s.neginf)
        flags.push_back(std::to_string(s.neginf) + " -Inf");
    const std::string suffix = "running_var";
    const bool runningVar = s.name.size() >= suffix.size()
                            && s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (runningVar && s.min && *s.min <= 0)
        flags.push_back("running_var <= 0");
    if (runningVar && s.nonfinite() > 0)
        flags.push_back("running_var not finite");
    if (s.norm > thresholds.normAbove)
        flags.push_back("norm " + shortNumber(s.norm) + " > " + shortNumber(thresholds.normAbove));
    if (s.spectralNorm && *s.spectralNorm > thresholds.spectralNormAbove)
        flags.push_back("spectral norm " + shortNumber(*s.spectralNorm) + " > " + shortNumber(thresholds.spectralNormAbove));
    return flags;
}

} // namespace nanscope
