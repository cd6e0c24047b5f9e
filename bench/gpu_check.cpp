// The CUDA paths of nanscope, run once on a GPU (issue 54 item 7): the statistics on the device, a
// replay on `cuda`, and the Guard training a model on the device. Each is compared with the same
// work on the CPU, which is the reference, and timed against it. It prints one table and exits
// non-zero when a CUDA result disagrees with the CPU's.
//
// bench/gpu_check.sh builds and runs it on the device machine. With --device cpu it runs the same
// checks with LibTorch's CPU kernels as the "device": that is how the tests keep it working on
// machines without a GPU (ctest: gpu_check_on_cpu).
//
// usage: gpu_check [--device cuda|cpu] [WORK_DIR]
#include "BenchTable.h"

#include "core/replay/ReplayOptions.h"
#include "core/run/RunFormat.h"
#include "core/tensor/TensorStats.h"
#include "core/torch/DemoRuns.h"
#include "core/torch/Guard.h"
#include "core/torch/Replay.h"
#include "core/torch/TorchTensorStats.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsOf(const std::function<void()>& work)
{
    const auto start = Clock::now();
    work();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Check
{
    std::string what;
    bool agrees = false;
    std::string detail;
    double deviceMs = 0, cpuMs = 0;
};

// Tensors with planted NaN and Inf, as a checkpoint's would be after an overflow.
std::vector<nanscope::NamedTensor> plantedTensors(int64_t elements)
{
    std::vector<nanscope::NamedTensor> tensors;
    for (int i = 0; i < 6; ++i) {
        auto values = torch::randn({elements}, torch::kFloat32) * (1.0 + i);
        values[i * 7] = std::nan("");
        values[i * 11 + 1] = INFINITY;
        auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(elements) * sizeof(float));
        std::memcpy(bytes->data(), values.data_ptr<float>(), bytes->size());
        nanscope::NamedTensor t;
        t.name = "layer" + std::to_string(i) + ".weight";
        t.tensor.dtype = nanscope::DType::Float32;
        t.tensor.shape = {elements};
        t.tensor.strides = {1};
        t.tensor.storage = bytes;
        t.tensor.location = "cuda:0";
        tensors.push_back(std::move(t));
    }
    return tensors;
}

Check statistics(bool onCuda, int64_t elements)
{
    Check check{"statistics of 6 tensors of " + std::to_string(elements) + " float32 (NaN and Inf planted)"};
    const auto tensors = plantedTensors(elements);
    nanscope::StatsOptions device, cpu;
    device.device = onCuda ? nanscope::StatsDevice::Cuda : nanscope::StatsDevice::TorchCpu;
    cpu.device = nanscope::StatsDevice::Cpu;
    nanscope::Result<std::vector<nanscope::TensorStats>> onDevice = nanscope::Error{"not run"};
    nanscope::Result<std::vector<nanscope::TensorStats>> onCpu = nanscope::Error{"not run"};
    nanscope::computeCheckpointStats(tensors, device); // the device's first use: its context and kernels
    check.deviceMs = millisecondsOf([&] { onDevice = nanscope::computeCheckpointStats(tensors, device); });
    check.cpuMs = millisecondsOf([&] { onCpu = nanscope::computeCheckpointStats(tensors, cpu); });
    if (!onDevice || !onCpu) {
        check.detail = !onDevice ? onDevice.error() : onCpu.error();
        return check;
    }
    check.agrees = onDevice->size() == onCpu->size();
    for (size_t i = 0; check.agrees && i < onCpu->size(); ++i) {
        const auto& a = (*onDevice)[i];
        const auto& b = (*onCpu)[i];
        const bool counts = a.nan == b.nan && a.posinf == b.posinf && a.neginf == b.neginf;
        const bool range = a.min && b.min && *a.min == *b.min && a.max && b.max && *a.max == *b.max;
        const bool mean = a.mean && b.mean && std::abs(*a.mean - *b.mean) <= 1e-5 * (1 + std::abs(*b.mean));
        check.agrees = counts && range && mean;
        if (!check.agrees)
            check.detail = a.name + " differs from the CPU kernel";
    }
    if (check.agrees)
        check.detail = "NaN, Inf, min, max and mean agree with the CPU kernel";
    return check;
}

Check replay(bool onCuda, const std::string& work)
{
    Check check{"replay of the division-by-zero demo run, step 180, with bisection"};
    const std::string run = work + "/division-by-zero";
    for (const auto& scenario : nanscope::demoScenarios())
        if (scenario.name == "division-by-zero" && !std::filesystem::exists(run + "/run.h5"))
            if (auto written = nanscope::writeDemoRun(run, scenario); !written) {
                check.detail = written.error();
                return check;
            }
    nanscope::ReplayOptions options;
    options.checkpoint = run + "/checkpoints/" + nanscope::runformat::stepFileStem(180) + ".pt";
    options.batch = run + "/batches/" + nanscope::runformat::stepFileStem(180) + ".pt";
    options.lossName = "cross_entropy";
    options.bisect = true;
    nanscope::ReplayOptions onDevice = options;
    onDevice.device = onCuda ? "cuda" : "cpu";
    nanscope::Result<nanscope::ReplayResult> device = nanscope::Error{"not run"}, cpu = nanscope::Error{"not run"};
    check.deviceMs = millisecondsOf([&] { device = nanscope::replayStep(onDevice); });
    check.cpuMs = millisecondsOf([&] { cpu = nanscope::replayStep(options); });
    if (!device || !cpu) {
        check.detail = !device ? device.error() : cpu.error();
        return check;
    }
    const auto where = [](const nanscope::ReplayResult& r) {
        return r.firstNonfinite ? r.firstNonfinite->op + " in " + r.firstNonfinite->module : std::string("none");
    };
    check.agrees = where(*device) == where(*cpu) && device->badSamples == cpu->badSamples && where(*cpu) != "none";
    check.detail = "first non-finite op: " + where(*device) + " (CPU: " + where(*cpu) + "); bad samples: " +
                   std::to_string(device->badSamples.size()) + " (CPU: " + std::to_string(cpu->badSamples.size()) + ")";
    return check;
}

// Trains a small MLP for `steps` steps on `device`, one batch holding a NaN at `nanStep`; with a
// Guard writing `runDir` when it is not empty. Returns the steps the Guard skipped.
std::vector<int64_t> train(const torch::Device& device, int64_t steps, int64_t nanStep, const std::string& runDir,
                           double& milliseconds)
{
    torch::manual_seed(3);
    auto net = torch::nn::Sequential(torch::nn::Linear(64, 256), torch::nn::ReLU(), torch::nn::Linear(256, 256),
                                     torch::nn::ReLU(), torch::nn::Linear(256, 10));
    net->to(device);
    torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-3));
    std::unique_ptr<nanscope::Guard> guard;
    if (!runDir.empty()) {
        nanscope::GuardOptions options;
        options.lossName = "cross_entropy";
        options.checkpointEvery = 20;
        options.activationsEvery = 5;
        guard = std::make_unique<nanscope::Guard>(runDir, *net, options);
    }
    std::vector<int64_t> skipped;
    milliseconds = millisecondsOf([&] {
        for (int64_t step = 0; step < steps; ++step) {
            auto inputs = torch::randn({128, 64}).to(device);
            auto targets = torch::randint(10, {128}, torch::kLong).to(device);
            if (step == nanStep)
                inputs[5][7] = std::nan("");
            if (guard)
                guard->beginStep(step, inputs, targets);
            auto loss = torch::nn::functional::cross_entropy(net->forward(inputs), targets);
            optimizer.zero_grad();
            loss.backward();
            const bool apply = guard ? guard->endStep(loss, optimizer) : std::isfinite(loss.item<double>());
            if (apply)
                optimizer.step();
            else
                skipped.push_back(step);
        }
        if (device.is_cuda())
            torch::cuda::synchronize();
    });
    if (guard)
        guard->close();
    return skipped;
}

Check guardOnDevice(bool onCuda, const std::string& work)
{
    Check check{"the Guard training an MLP for 60 steps, a NaN batch at step 30"};
    const torch::Device device(onCuda ? torch::kCUDA : torch::kCPU);
    double plainMs = 0;
    try {
        train(device, 60, 30, "", plainMs);
        std::filesystem::remove_all(work + "/guarded");
        const auto skipped = train(device, 60, 30, work + "/guarded", check.deviceMs);
        check.cpuMs = plainMs; // the same loop unguarded on the same device: the Guard's cost
        check.agrees = skipped == std::vector<int64_t>{30} && std::filesystem::exists(work + "/guarded/run.h5");
        check.detail = "skipped " + std::to_string(skipped.size()) + " step(s)" +
                       (skipped.empty() ? "" : ", the first " + std::to_string(skipped.front())) +
                       "; unguarded loop on the device: " + nanscope::bench::milliseconds(plainMs);
    } catch (const std::exception& e) {
        check.detail = e.what();
    }
    return check;
}

} // namespace

int main(int argc, char** argv)
{
    std::string deviceName = "cuda";
    std::string work = (std::filesystem::temp_directory_path() / "nanscope-gpu-check").string();
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            deviceName = argv[++i];
        else
            work = argv[i];
    }
    if (deviceName != "cuda" && deviceName != "cpu") {
        std::fprintf(stderr, "usage: gpu_check [--device cuda|cpu] [WORK_DIR]\n");
        return 2;
    }
    nanscope::torchstats::installStatsBackend();
    const bool onCuda = deviceName == "cuda";
    if (onCuda && !torch::cuda::is_available()) {
        std::fprintf(stderr, "gpu_check: LibTorch %s sees no CUDA device (a CPU-only LibTorch, or no GPU here)\n",
                     nanscope::libtorchVersion().c_str());
        return 3;
    }
    std::filesystem::create_directories(work);
    std::printf("nanscope GPU check, LibTorch %s, device %s%s\n", nanscope::libtorchVersion().c_str(), deviceName.c_str(),
                onCuda ? (" (" + std::to_string(torch::cuda::device_count()) + " visible)").c_str() : "");
    const std::vector<Check> checks{statistics(onCuda, onCuda ? (int64_t(1) << 24) : (int64_t(1) << 18)),
                                    replay(onCuda, work), guardOnDevice(onCuda, work)};
    std::printf("\n| check | agrees | %s | reference | what |\n|---|---|---|---|---|\n", deviceName.c_str());
    bool all = true;
    for (const Check& c : checks) {
        std::printf("| %s | %s | %s | %s | %s |\n", c.what.c_str(), c.agrees ? "yes" : "**no**",
                    nanscope::bench::milliseconds(c.deviceMs).c_str(), nanscope::bench::milliseconds(c.cpuMs).c_str(),
                    c.detail.c_str());
        all = all && c.agrees;
    }
    std::printf("\nreference: the CPU for statistics and replay; the same loop without the Guard for the Guard.\n");
    std::filesystem::remove_all(work);
    return all ? 0 : 1;
}
