#include "core/torch/GuardReadback.h"

#include "core/run/RunFormat.h"
#include "core/tensor/Moments.h"
#include "core/torch/TensorRange.h"
#include "core/torch/TorchReductions.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope::guardreadback {

namespace ts = torchstats;

torch::Tensor rangeSlots(const torch::Tensor& tensor)
{
    if (!tensor.is_cpu())
        return ts::queueReductions(tensor);
    const TensorStats s = torchutil::tensorStats(tensor);
    torch::Tensor slots = torch::zeros({ts::kSlots}, torch::kFloat64);
    double* r = slots.data_ptr<double>();
    const int64_t count = s.finite();
    r[ts::kCount] = double(count);
    r[ts::kNan] = double(s.nan);
    r[ts::kPosInf] = double(s.posinf);
    r[ts::kNegInf] = double(s.neginf);
    r[ts::kZero] = double(s.zero);
    r[ts::kSubnormal] = double(s.subnormal);
    if (count > 0 && s.min && s.max && s.mean && s.std) {
        r[ts::kMin] = *s.min;
        r[ts::kMax] = *s.max;
        r[ts::kMean] = *s.mean;
        r[ts::kM2] = count > 1 ? *s.std * *s.std * double(count - 1) : 0.0;
    }
    r[ts::kNonzeroAbsmin] = s.nonzeroAbsmin ? *s.nonzeroAbsmin : std::numeric_limits<double>::infinity();
    return slots;
}

torch::Tensor tensorNorms(const std::vector<torch::Tensor>& tensors)
{
    if (tensors.empty())
        return torch::zeros({0});
    const auto device = tensors.front().device();
    const auto dtype = tensors.front().scalar_type();
    const bool fusable = (dtype == torch::kFloat || dtype == torch::kDouble) &&
                         std::all_of(tensors.begin(), tensors.end(), [&](const torch::Tensor& t) {
                             return t.device() == device && t.scalar_type() == dtype;
                         });
    std::vector<torch::Tensor> norms;
    if (fusable) {
        norms = at::_foreach_norm(tensors, 2);
    } else {
        for (const auto& t : tensors) // half precision: norms accumulated in float32
            norms.push_back(t.to(torch::kFloat).norm().to(device, /*non_blocking=*/true));
    }
    return torch::stack(norms).to(torch::kFloat);
}

std::vector<double> mergeSlots(const std::vector<const double*>& parts)
{
    std::vector<double> merged(ts::kSlots, 0.0);
    if (parts.size() == 1) {
        merged.assign(parts.front(), parts.front() + ts::kSlots);
        return merged;
    }
    MomentSums moments;
    merged[ts::kMin] = std::numeric_limits<double>::infinity();
    merged[ts::kMax] = -std::numeric_limits<double>::infinity();
    merged[ts::kNonzeroAbsmin] = std::numeric_limits<double>::infinity();
    for (const double* r : parts) {
        merged[ts::kNonzeroAbsmin] = std::min(merged[ts::kNonzeroAbsmin], r[ts::kNonzeroAbsmin]);
        for (int slot : {ts::kCount, ts::kNan, ts::kPosInf, ts::kNegInf, ts::kZero, ts::kSubnormal})
            merged[slot] += r[slot];
        if (r[ts::kCount] > 0) {
            merged[ts::kMin] = std::min(merged[ts::kMin], r[ts::kMin]);
            merged[ts::kMax] = std::max(merged[ts::kMax], r[ts::kMax]);
            moments = combineMoments(moments, {int64_t(r[ts::kCount]), r[ts::kMean], r[ts::kM2]});
        }
    }
    merged[ts::kMean] = moments.mean;
    merged[ts::kM2] = moments.m2;
    return merged;
}

TensorStats statsOf(const double* slots)
{
    TensorStats stats;
    stats.numel = int64_t(slots[ts::kCount] + slots[ts::kNan] + slots[ts::kPosInf] + slots[ts::kNegInf]);
    ts::fillFromSlots(slots, stats);
    return stats;
}

std::map<std::string, std::vector<float>> rangeRow(const std::vector<TensorStats>& stats)
{
    namespace column = runformat::column;
    std::map<std::string, std::vector<float>> row;
    for (const char* name : runformat::kActivationsColumns)
        row[name]; // every column of the table, also for no module
    for (const auto& s : stats) {
        row[column::kMin].push_back(torchutil::runFileFigure(s.min));
        row[column::kMax].push_back(torchutil::runFileFigure(s.max));
        row[column::kMean].push_back(torchutil::runFileFigure(s.mean));
        row[column::kStd].push_back(torchutil::runFileFigure(s.std));
        row[column::kNan].push_back(float(s.nan));
        row[column::kInf].push_back(float(s.inf()));
    }
    return row;
}

bool StepFigures::finite() const
{
    return std::isfinite(loss) && std::isfinite(gradNorm);
}

StepFigures readStepFigures(const torch::Tensor& loss, const guardmodel::ModelAccess& model,
                            const NamedSlots& inputSlots, const NamedSlots& observed)
{
    // Everything the step logs, queued on the device, then one copy to the host.
    StepReadback readback;
    const size_t lossAt = readback.queue(loss.detach().reshape({1}));
    std::vector<torch::Tensor> params, grads;
    std::vector<size_t> gradOwner; // index into parameters of each defined gradient
    for (size_t i = 0; i < model.parameters.size(); ++i) {
        params.push_back(model.parameters[i].tensor.detach());
        const auto& grad = model.parameters[i].tensor.grad();
        if (grad.defined()) {
            grads.push_back(grad.detach());
            gradOwner.push_back(i);
        }
    }
    const size_t paramAt = readback.queue(tensorNorms(params));
    const size_t gradAt = readback.queue(tensorNorms(grads));
    std::vector<torch::Tensor> bufferSlots;
    for (const auto& layer : model.norms) {
        bufferSlots.push_back(rangeSlots(layer.runningMean));
        bufferSlots.push_back(rangeSlots(layer.runningVar));
    }
    StepFigures figures;
    figures.bufferAt = bufferSlots.empty() ? 0 : readback.queue(torch::stack(bufferSlots));
    std::vector<torch::Tensor> inputParts;
    for (const auto& [name, slots] : inputSlots)
        inputParts.push_back(slots.to(loss.device()));
    figures.inputAt = inputParts.empty() ? 0 : readback.queue(torch::stack(inputParts));
    std::vector<torch::Tensor> observedParts;
    for (const auto& [name, slots] : observed)
        observedParts.push_back(slots.to(loss.device()));
    figures.observedAt = observedParts.empty() ? 0 : readback.queue(torch::stack(observedParts));
    figures.slots = readback.read(loss.device());
    const std::vector<double>& host = figures.slots;

    figures.loss = host[lossAt];
    figures.paramNorms.assign(params.size(), 0.f);
    figures.gradNorms.assign(params.size(), 0.f);
    figures.gradNonfinite.assign(params.size(), 0.f);
    double paramSquared = 0, gradSquared = 0;
    for (size_t i = 0; i < params.size(); ++i) {
        figures.paramNorms[i] = float(host[paramAt + i]);
        paramSquared += host[paramAt + i] * host[paramAt + i];
    }
    std::vector<size_t> nonfiniteGrads; // positions in grads
    for (size_t j = 0; j < grads.size(); ++j) {
        const double g = host[gradAt + j];
        figures.gradNorms[gradOwner[j]] = float(g);
        gradSquared += g * g;
        if (!std::isfinite(g))
            nonfiniteGrads.push_back(j);
    }
    // The failure path only: count the non-finite values of the gradients whose norm is not
    // finite, all in one more copy (a finite norm means a finite gradient).
    if (!nonfiniteGrads.empty()) {
        std::vector<torch::Tensor> counts;
        for (size_t j : nonfiniteGrads)
            counts.push_back(torch::logical_not(torch::isfinite(grads[j])).sum().to(loss.device()));
        const torch::Tensor hostCounts = torch::stack(counts).to(torch::kFloat64).cpu();
        for (size_t k = 0; k < nonfiniteGrads.size(); ++k) {
            figures.gradNonfinite[gradOwner[nonfiniteGrads[k]]] = float(hostCounts[int64_t(k)].item<double>());
            figures.nonfiniteGradients.push_back(gradOwner[nonfiniteGrads[k]]);
        }
    }
    figures.paramNorm = std::sqrt(paramSquared);
    figures.gradNorm = std::sqrt(gradSquared);
    return figures;
}

std::map<std::string, std::vector<float>> layerRow(const StepFigures& figures)
{
    namespace column = runformat::column;
    return {{column::kGradNorm, figures.gradNorms},
            {column::kParamNorm, figures.paramNorms},
            {column::kGradNonfinite, figures.gradNonfinite}};
}

std::map<std::string, std::vector<float>> bufferRow(size_t normLayers, const double* slots)
{
    namespace column = runformat::column;
    std::map<std::string, std::vector<float>> row;
    for (size_t i = 0; i < normLayers; ++i) {
        const TensorStats mean = statsOf(slots + (2 * i) * torchstats::kSlots);
        const TensorStats var = statsOf(slots + (2 * i + 1) * torchstats::kSlots);
        row[column::kRunningMeanMin].push_back(torchutil::runFileFigure(mean.min));
        row[column::kRunningMeanMax].push_back(torchutil::runFileFigure(mean.max));
        row[column::kRunningVarMin].push_back(torchutil::runFileFigure(var.min));
        row[column::kRunningVarMax].push_back(torchutil::runFileFigure(var.max));
        row[column::kNonfinite].push_back(float(mean.nonfinite() + var.nonfinite()));
    }
    return row;
}

} // namespace nanscope::guardreadback
