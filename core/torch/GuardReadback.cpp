#include "core/torch/GuardReadback.h"

#include "core/run/RunFormat.h"
#include "core/tensor/Moments.h"
#include "core/torch/TensorRange.h"
#include "core/torch/TorchReductions.h"

#include <algorithm>
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

} // namespace nanscope::guardreadback
