#pragma once

// Internal to core/torch (includes LibTorch): one part of the Guard (Guard.cpp).
// The step's statistics: queued on the device and read back in one copy, merged, and shaped into
// run.h5 rows.

#include "core/tensor/TensorStats.h"
#include "core/torch/GuardModel.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace nanscope::guardreadback {

// The step's statistics, queued on the device as they are computed and copied to the host at once:
// one device-to-host copy per step on a GPU (one synchronisation), never one .item() per tensor.
class StepReadback
{
public:
    // Queues a tensor of values (any shape, any floating or integer dtype); returns where its
    // values start in the host copy.
    size_t queue(const torch::Tensor& values)
    {
        const size_t offset = m_size;
        m_parts.push_back(values.detach().reshape({-1}));
        m_size += size_t(values.numel());
        return offset;
    }

    // Gathers every queued part on `device` as float64 and copies them to the host in one go.
    std::vector<double> read(const torch::Device& device)
    {
        std::vector<double> host;
        if (m_parts.empty())
            return host;
        std::vector<torch::Tensor> onDevice;
        onDevice.reserve(m_parts.size());
        for (const auto& part : m_parts)
            onDevice.push_back(part.to(device, torch::kFloat64, /*non_blocking=*/true));
        const torch::Tensor all = torch::cat(onDevice).cpu(); // the step's one device-to-host copy
        host.assign(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
        m_parts.clear();
        m_size = 0;
        return host;
    }

private:
    std::vector<torch::Tensor> m_parts;
    size_t m_size = 0;
};

// A tensor's statistics as the kSlots of TorchReductions.h. On a device they are queued there
// (read back with the step's one copy). On the CPU nothing waits for a device, and the one fused
// host kernel (core/tensor/TensorStats, one pass) is several times faster than the dozen LibTorch
// passes the device path takes (bench_guard measured a transformer step at 3x with those).
torch::Tensor rangeSlots(const torch::Tensor& tensor);

// The L2 norm of each tensor, as one float32 vector on the first tensor's device: the fused
// _foreach_norm where the tensors allow it (one dtype, one device), else one norm each.
torch::Tensor tensorNorms(const std::vector<torch::Tensor>& tensors);

// Merges the reductions of several outputs of one module (a module called twice in a forward).
std::vector<double> mergeSlots(const std::vector<const double*>& parts);

TensorStats statsOf(const double* slots);

// The row of /activations or /inputs: one column per statistic, one entry per logged tensor.
std::map<std::string, std::vector<float>> rangeRow(const std::vector<TensorStats>& stats);

// The figures of one step, read back in one copy: the loss, each parameter's norm and gradient
// norm (with the non-finite count of a gradient whose norm is not finite: the failure path's one
// extra copy), and the statistics slots of the norm layers' buffers, the inputs and the observed
// modules' outputs.
struct StepFigures
{
    double loss = 0;
    std::vector<float> paramNorms, gradNorms, gradNonfinite; // one per parameter, in the model's order
    double paramNorm = 0, gradNorm = 0;                       // over every parameter
    std::vector<size_t> nonfiniteGradients;                   // parameters whose gradient norm is not finite
    std::vector<double> slots;                                // the statistics slots below, in one copy
    size_t bufferAt = 0, inputAt = 0, observedAt = 0;         // where each part starts in `slots`

    bool finite() const;
};

using NamedSlots = std::vector<std::pair<std::string, torch::Tensor>>;

StepFigures readStepFigures(const torch::Tensor& loss, const guardmodel::ModelAccess& model,
                            const NamedSlots& inputSlots, const NamedSlots& observed);

// The row of /layers: gradient norm, parameter norm and non-finite gradient count per parameter.
std::map<std::string, std::vector<float>> layerRow(const StepFigures& figures);

// The row of /buffers: the range of each norm layer's running mean and variance (`slots` holds two
// statistics slots per layer, mean then variance).
std::map<std::string, std::vector<float>> bufferRow(size_t normLayers, const double* slots);

} // namespace nanscope::guardreadback
