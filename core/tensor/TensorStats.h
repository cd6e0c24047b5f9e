#pragma once

// Health statistics of checkpoint tensors, each computed in one fused pass: on the CPU by a
// plain C++ kernel over the raw bytes, or by LibTorch on a CUDA device. Value structs only; no
// LibTorch in this header.

#include "core/tensor/Tensor.h"
#include "core/Result.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

struct TensorStats
{
    std::string name;
    std::vector<int64_t> shape;
    DType dtype = DType::Float32;
    int64_t numel = 0;

    // Over the finite elements; empty when none is finite. std is the unbiased (n - 1) estimate,
    // as torch.std gives it, and 0 for a single finite element.
    std::optional<double> min, max, mean, std;
    double norm = 0;   // L2 norm of the finite elements
    double absmax = 0; // largest |x| over the finite elements
    // Smallest nonzero |x| over the finite elements; empty when none is finite and nonzero. With
    // absmax it gives a value's dynamic range, log2(absmax / nonzeroAbsmin).
    std::optional<double> nonzeroAbsmin;

    int64_t nan = 0, posinf = 0, neginf = 0, zero = 0;
    int64_t subnormal = 0; // nonzero values below the smallest normal number of the tensor's dtype

    // Only when asked for: bin counts of the finite values over [min, max].
    std::vector<int64_t> histogram;
    // Only when asked for, for 2-D and higher weights (flattened to [rows, -1] as torch does).
    std::optional<double> spectralNorm;

    int64_t inf() const { return posinf + neginf; }
    int64_t nonfinite() const { return nan + posinf + neginf; }
    int64_t finite() const { return numel - nonfinite(); }
};

// computeTensorStats splits a tensor of more elements than this across threads; a checkpoint's
// smaller tensors are spread over threads one tensor each instead.
inline constexpr int64_t kStatsElementsPerThread = int64_t(1) << 21;

enum class StatsDevice {
    Auto,     // CUDA for tensors saved from CUDA when LibTorch has a GPU, else the CPU kernel
    Cpu,      // the fused C++ kernel
    Cuda,     // LibTorch on the GPU; fails when LibTorch has no CUDA
    TorchCpu, // the LibTorch path on the CPU: what the CUDA path computes, checkable without a GPU
};

struct StatsOptions
{
    StatsDevice device = StatsDevice::Auto;
    int histogramBins = 0; // 0: none
    bool spectralNorm = false;
    int threads = 0; // CPU threads for one large tensor; 0: one per hardware thread
};

// One fused pass over the tensor's bytes on the CPU; a strided view is walked as a copy. A tensor
// of more than a few million elements is split across `threads` threads (0: one per hardware
// thread); the figures agree to rounding whatever the split.
TensorStats computeTensorStats(const std::string& name, const TensorView& tensor, int histogramBins = 0,
                               int threads = 0);
// The same pass over elements already in memory, row-major (a replayed op's output, say): the one
// statistics kernel for every tensor nanscope looks at.
TensorStats computeContiguousStats(const std::string& name, const uint8_t* data, DType dtype,
                                   const std::vector<int64_t>& shape, int histogramBins = 0, int threads = 0);

// The same pass over elements laid out as `runCount` runs of `runElements` contiguous elements, run
// k starting at byte address runStart(k): a slice of a larger tensor (one of the q, k, v thirds of
// a fused projection) read in place, with no copy. Figures agree to rounding with the contiguous
// pass over the same elements; no histogram.
TensorStats computeRunStats(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                            int64_t runElements, int64_t runCount,
                            const std::function<const uint8_t*(int64_t run)>& runStart);

// Every tensor of a checkpoint. The CUDA path queues every tensor's reductions and reads the results
// back once, so there is no host synchronisation per tensor.
Result<std::vector<TensorStats>> computeCheckpointStats(const std::vector<NamedTensor>& tensors,
                                                        const StatsOptions& options = {});

// The device path of the statistics (LibTorch's kernels, on CUDA or on the CPU as a reference).
// core has no LibTorch: the torch library installs this backend at start-up
// (nanscope::torchstats::installStatsBackend()); without one, StatsDevice::Cuda and TorchCpu fail
// with a clear message and Auto uses the CPU kernel.
struct TensorStatsBackend
{
    std::function<bool()> cudaAvailable;
    std::function<Result<std::vector<TensorStats>>(const std::vector<const NamedTensor*>&, bool onCuda)> compute;
};
void setTensorStatsBackend(TensorStatsBackend backend);

// True when a backend is installed and it sees a GPU.
bool cudaAvailable();

// Largest singular value of a 2-D (or flattened N-D) float tensor by power iteration; empty for
// other tensors or when a value is not finite.
std::optional<double> spectralNorm(const TensorView& tensor);

struct HealthThresholds
{
    double normAbove = 1e6;
    double spectralNormAbove = 1e6;
};

// Short, readable findings: "3 NaN", "running_var <= 0", "norm 2.1e+07 > 1e+06".
std::vector<std::string> healthFlags(const TensorStats& stats, const HealthThresholds& thresholds = {});


} // namespace nanscope
