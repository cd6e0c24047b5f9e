// A checkpoint's statistics: the per-tensor kernel (TensorStats.cpp) spread over threads, or the
// LibTorch backend when one is installed and asked for; spectral norms; health flags.
#include "core/tensor/TensorStats.h"
#include "core/NumberText.h"

#include "core/tensor/BatchNormHealth.h"
#include "core/tensor/SpreadOverCores.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

namespace nanscope {

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

namespace {
TensorStatsBackend& installedBackend()
{
    static TensorStatsBackend backend;
    return backend;
}
} // namespace

void setTensorStatsBackend(TensorStatsBackend backend)
{
    installedBackend() = std::move(backend);
}

bool cudaAvailable()
{
    const auto& backend = installedBackend();
    return backend.cudaAvailable && backend.cudaAvailable();
}

Result<std::vector<TensorStats>> computeCheckpointStats(const std::vector<NamedTensor>& tensors,
                                                        const StatsOptions& options)
{
    if (options.device == StatsDevice::Cuda && !cudaAvailable())
        return Error{"no CUDA device: LibTorch was built without CUDA or sees no GPU; use --device cpu"};
    std::vector<TensorStats> stats(tensors.size());
    std::vector<size_t> onTorch, small;
    const bool haveCuda = options.device == StatsDevice::Auto && cudaAvailable();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const bool useTorch = options.device == StatsDevice::Cuda || options.device == StatsDevice::TorchCpu
                              || (haveCuda && tensors[i].tensor.location.rfind("cuda", 0) == 0);
        if (useTorch)
            onTorch.push_back(i);
        else if (tensors[i].tensor.numel() < 2 * kStatsElementsPerThread)
            small.push_back(i);
        else // split across threads inside the tensor
            stats[i] = computeTensorStats(tensors[i].name, tensors[i].tensor, options.histogramBins, options.threads);
    }
    // A checkpoint is mostly tensors too small to split: spread them over threads instead, one
    // tensor at a time each, so a many-layer checkpoint uses every core.
    int64_t smallElements = 0;
    for (size_t i : small)
        smallElements += tensors[i].tensor.numel();
    const int64_t allowed = options.threads > 0 ? options.threads : std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t workers = std::min<int64_t>({allowed, int64_t(small.size()), 1 + smallElements / kStatsElementsPerThread});
    std::atomic<size_t> nextSmall{0};
    auto work = [&] {
        for (size_t k = nextSmall++; k < small.size(); k = nextSmall++)
            stats[small[k]] = computeTensorStats(tensors[small[k]].name, tensors[small[k]].tensor, options.histogramBins, 1);
    };
    spreadOverCores(int(workers), work);
    if (!onTorch.empty()) {
        std::vector<const NamedTensor*> batch;
        for (size_t i : onTorch)
            batch.push_back(&tensors[i]);
        const auto& backend = installedBackend();
        if (!backend.compute)
            return Error{"this nanscope was built without the LibTorch statistics path; use --device cpu"};
        auto results = backend.compute(batch, options.device != StatsDevice::TorchCpu);
        if (!results)
            return Error{results.error()};
        for (size_t k = 0; k < onTorch.size(); ++k) {
            stats[onTorch[k]] = std::move((*results)[k]);
            if (options.histogramBins > 0) // bins need min and max first; a second pass on the CPU
                stats[onTorch[k]].histogram
                    = computeTensorStats("", tensors[onTorch[k]].tensor, options.histogramBins, options.threads).histogram;
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
    return numberText(value, 3);
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
    if (batchnorm::isRunningVarianceName(s.name)) {
        switch (batchnorm::judgeBuffers(double(s.nonfinite()), s.min ? *s.min : std::nan(""))) {
        case batchnorm::BufferHealth::Poisoned: flags.push_back("running_var not finite"); break;
        case batchnorm::BufferHealth::Negative: flags.push_back("running_var < 0"); break;
        case batchnorm::BufferHealth::Collapsed:
            flags.push_back("running_var <= " + shortNumber(batchnorm::kCollapsedVariance) + " (collapsed)");
            break;
        case batchnorm::BufferHealth::Healthy: break;
        }
    }
    if (s.norm > thresholds.normAbove)
        flags.push_back("norm " + shortNumber(s.norm) + " > " + shortNumber(thresholds.normAbove));
    if (s.spectralNorm && *s.spectralNorm > thresholds.spectralNormAbove)
        flags.push_back("spectral norm " + shortNumber(*s.spectralNorm) + " > " + shortNumber(thresholds.spectralNormAbove));
    return flags;
}

} // namespace nanscope
