// How fast is the fused statistics pass of `nanscope stats`? Prints figures, asserts nothing.
//
// Baselines measured in the same run, on the same bytes:
//   - a plain torch sum (LibTorch's vectorised reduction): the memory bandwidth one read of the
//     tensor costs. The fused pass should reach >= 70% of it. Both sides get the same number of
//     threads: first one thread each, then every hardware thread each (LibTorch's own default may
//     be one thread, which would flatter the fused pass).
//   - the naive way: separate LibTorch calls for isnan, isinf, zeros, then min, max, mean, std and
//     norm over the finite values. The fused pass should be >= 3x faster.
//
//     bench_tensor_stats [MEGABYTES]    float32 tensor size, default 128 (far beyond the caches);
//                                       bench/run_all.sh uses 48, which the naive baseline's
//                                       minutes of separate calls make worth it

#include "BenchTable.h"
#include "core/tensor/TensorStats.h"
#include "core/torch/TorchTensorStats.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace nanscope;

namespace {

template<typename F>
double bestSeconds(int repeats, F&& f)
{
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        // LibTorch's OpenMP workers spin for a while after each parallel region; let them go to
        // sleep so they do not compete with whatever is timed next.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const auto start = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

double sink = 0;

void naiveStats(const torch::Tensor& t)
{
    const auto nan = torch::isnan(t).sum().item<int64_t>();
    const auto inf = torch::isinf(t).sum().item<int64_t>();
    const auto zero = (t == 0).sum().item<int64_t>();
    const auto finite = t.masked_select(torch::isfinite(t));
    const double min = finite.min().item<double>();
    const double max = finite.max().item<double>();
    const double mean = finite.mean().item<double>();
    const double std = finite.std().item<double>();
    const double norm = finite.norm().item<double>();
    sink += double(nan + inf + zero) + min + max + mean + std + norm;
}

void run(const char* label, torch::ScalarType type, DType dtype, int64_t numel, int threads)
{
    torch::set_num_threads(threads);
    auto source = torch::randn({numel}, torch::kFloat64).mul_(3.0);
    source.index_put_({torch::indexing::Slice(0, torch::indexing::None, 100003)}, NAN);
    const auto typed = source.to(type).contiguous();
    const size_t bytes = size_t(typed.numel()) * typed.element_size();
    auto storage = std::make_shared<std::vector<uint8_t>>(bytes);
    std::memcpy(storage->data(), typed.data_ptr(), bytes);
    // Every contender reads the same bytes.
    const auto tensor = torch::from_blob(storage->data(), {numel}, torch::TensorOptions().dtype(type));
    TensorView view;
    view.dtype = dtype;
    view.shape = {numel};
    view.strides = {1};
    view.storage = storage;
    NamedTensor named{"x", view};

    // Interleaved, best of each: on a shared machine both see the same background load.
    double sumSeconds = 1e30, fusedSeconds = 1e30;
    for (int r = 0; r < 9; ++r) {
        sumSeconds = std::min(sumSeconds, bestSeconds(1, [&] { sink += tensor.sum().item<double>(); }));
        fusedSeconds = std::min(fusedSeconds, bestSeconds(1, [&] { sink += computeTensorStats("x", view, 0, threads).norm; }));
    }
    // The two slow baselines once each: they take seconds, hundreds of times the fused pass.
    const double naiveSeconds = bestSeconds(1, [&] { naiveStats(tensor); });
    StatsOptions torchPath;
    torchPath.device = StatsDevice::TorchCpu;
    const double torchPathSeconds = bestSeconds(1, [&] { sink += (*computeCheckpointStats({named}, torchPath))[0].norm; });
    const double gb = double(bytes) / 1e9;
    std::printf("%-9s %d thr %4.0f MB | torch sum %6.2f GB/s | fused %6.2f GB/s = %4.0f%% of sum | naive %7.1f ms, fused %4.1fx "
                "faster | LibTorch stats path %7.1f ms\n",
                label, threads, double(bytes) / 1e6, gb / sumSeconds, gb / fusedSeconds, 100.0 * sumSeconds / fusedSeconds,
                naiveSeconds * 1e3, naiveSeconds / fusedSeconds, torchPathSeconds * 1e3);
    namespace b = nanscope::bench;
    const std::string what = std::string(label) + ", " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : "");
    const double share = sumSeconds / fusedSeconds;
    // The target is for float32 and bfloat16; the other types are printed for context.
    const bool targeted = std::string(label) == "float32" || std::string(label) == "bfloat16";
    b::tableRow("bench_tensor_stats", what + ": fused statistics, share of a torch sum's bandwidth", b::percent(share),
                b::formatted("%.2f GB/s", gb / sumSeconds) + " torch sum", targeted ? ">= 70%" : "",
                targeted ? std::optional<bool>(share >= 0.7) : std::nullopt);
    b::tableRow("bench_tensor_stats", what + ": fused statistics against separate LibTorch calls",
                b::times(naiveSeconds / fusedSeconds) + " faster", b::milliseconds(naiveSeconds * 1e3) + " separate calls",
                ">= 3x", naiveSeconds / fusedSeconds >= 3);
}

void checkpointCase(int count, int64_t numel)
{
    std::vector<NamedTensor> tensors;
    std::vector<torch::Tensor> torchTensors;
    for (int i = 0; i < count; ++i) {
        const auto t = torch::randn({numel});
        auto storage = std::make_shared<std::vector<uint8_t>>(size_t(numel) * 4);
        std::memcpy(storage->data(), t.data_ptr(), size_t(numel) * 4);
        torchTensors.push_back(torch::from_blob(storage->data(), {numel}));
        tensors.push_back({"t" + std::to_string(i), {DType::Float32, {numel}, {1}, 0, storage, "cpu"}});
    }
    StatsOptions oneThread;
    oneThread.device = StatsDevice::Cpu;
    oneThread.threads = 1;
    const double fusedOneThread = bestSeconds(3, [&] { sink += (*computeCheckpointStats(tensors, oneThread))[0].norm; });
    const double fused = bestSeconds(3, [&] { sink += (*computeCheckpointStats(tensors, {StatsDevice::Cpu}))[0].norm; });
    const double naive = bestSeconds(2, [&] {
        for (const auto& t : torchTensors)
            naiveStats(t);
    });
    std::printf("%4d x %7lld float32 tensors | fused %7.1f ms (one thread %7.1f ms, %.2fx) | naive %8.1f ms | fused %5.1fx "
                "faster\n",
                count, static_cast<long long>(numel), fused * 1e3, fusedOneThread * 1e3, fusedOneThread / fused,
                naive * 1e3, naive / fused);
    if (!cudaAvailable()) {
        std::printf("     CUDA: LibTorch sees no CUDA device here; the CUDA path was not measured\n");
        return;
    }
    // The CUDA path queues every tensor's reductions and reads them back once; the baseline is
    // the naive calls on the GPU, each .item() of which waits for the device.
    StatsOptions onCuda;
    onCuda.device = StatsDevice::Cuda;
    std::vector<torch::Tensor> gpuTensors;
    for (const auto& t : torchTensors)
        gpuTensors.push_back(t.to(torch::kCUDA));
    const double cuda = bestSeconds(3, [&] { sink += (*computeCheckpointStats(tensors, onCuda))[0].norm; });
    const double cudaNaive = bestSeconds(2, [&] {
        for (const auto& t : gpuTensors)
            naiveStats(t);
    });
    std::printf("     CUDA: queued stats incl. upload %7.1f ms | naive on GPU, synchronising per call %8.1f ms | %.1fx\n",
                cuda * 1e3, cudaNaive * 1e3, cudaNaive / cuda);
}

} // namespace

int main(int argc, char** argv)
{
    const int64_t megabytes = argc > 1 ? std::max<int64_t>(8, std::atoll(argv[1])) : 128;
    nanscope::torchstats::installStatsBackend();
    const int hardware = int(std::max(1u, std::thread::hardware_concurrency()));
    std::printf("threads: LibTorch default intra-op %d, hardware %d\n", torch::get_num_threads(), hardware);
    const int64_t numel = megabytes << 18; // float32 elements: 4 bytes each
    std::vector<int> threadCounts{1};
    if (hardware > 1)
        threadCounts.push_back(hardware);
    for (int threads : threadCounts) {
        run("float32", torch::kFloat32, DType::Float32, numel, threads);
        run("float64", torch::kFloat64, DType::Float64, numel / 2, threads);
        run("bfloat16", torch::kBFloat16, DType::BFloat16, numel, threads);
        run("float16", torch::kFloat16, DType::Float16, numel, threads);
    }
    torch::set_num_threads(hardware);
    // Checkpoint-shaped cases: many tensors below the size that gets split across threads. Small
    // ones measure per-call overhead; medium ones whether the tensors are spread over the cores.
    checkpointCase(2000, 4096);
    checkpointCase(300, std::max<int64_t>(int64_t(1) << 15, (int64_t(1) << 19) * megabytes / 128));
    std::printf("(checksum %g)\n", sink);
    return 0;
}
