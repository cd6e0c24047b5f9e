#include "core/torch/TorchTensorStats.h"

#include "core/torch/TorchDType.h"
#include "core/torch/TorchReductions.h"

#include <torch/torch.h>

#include <cfloat>
#include <cmath>
#include <limits>

namespace nanscope::torchstats {

namespace {

// All reductions of one tensor as one small float64 tensor on the device; nothing is read back.
torch::Tensor reductions(const TensorView& view, const torch::Device& device)
{
    // from_blob does not copy; the storage outlives this call, and .to() copies before it returns.
    auto* base = const_cast<uint8_t*>(view.storage->data()) + view.storageOffset * int64_t(dtypeSize(view.dtype));
    const auto host = torch::from_blob(base, view.shape, view.strides, torch::TensorOptions().dtype(torchdtype::scalarTypeOf(view.dtype)));
    return queueReductions(host.to(device));
}

} // namespace

bool cudaAvailable()
{
    try {
        return torch::cuda::is_available();
    } catch (const c10::Error&) {
        return false;
    }
}

Result<std::vector<TensorStats>> computeWithTorch(const std::vector<const NamedTensor*>& tensors, bool onCuda)
{
    try {
        torch::NoGradGuard noGrad;
        const torch::Device device = onCuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
        std::vector<torch::Tensor> queued;
        for (const NamedTensor* t : tensors)
            queued.push_back(t->tensor.numel() > 0 ? reductions(t->tensor, device)
                                                   : torch::zeros({kSlots}, torch::TensorOptions().dtype(torch::kFloat64).device(device)));
        const auto all = queued.empty() ? torch::Tensor() : torch::stack(queued).cpu().contiguous();
        std::vector<TensorStats> stats;
        for (size_t i = 0; i < tensors.size(); ++i) {
            const TensorView& view = tensors[i]->tensor;
            TensorStats s;
            s.name = tensors[i]->name;
            s.shape = view.shape;
            s.dtype = view.dtype;
            s.numel = view.numel();
            fillFromSlots(all.data_ptr<double>() + i * kSlots, s);
            stats.push_back(std::move(s));
        }
        return stats;
    } catch (const c10::Error& e) {
        return Error{std::string("LibTorch: ") + e.what_without_backtrace()};
    } catch (const std::exception& e) {
        return Error{std::string("LibTorch: ") + e.what()};
    }
}

double smallestNormal(c10::ScalarType type)
{
    switch (type) {
    case torch::kFloat:
    case torch::kBFloat16: return FLT_MIN;
    case torch::kDouble: return DBL_MIN;
    case torch::kHalf: return 6.103515625e-05;
    default: return 0.0;
    }
}

torch::Tensor queueReductions(const torch::Tensor& tensor)
{
    torch::NoGradGuard noGrad;
    if (tensor.numel() == 0) // no element: every count 0, and no finite value to take a min of
        return torch::zeros({kSlots}, torch::TensorOptions().dtype(torch::kFloat64).device(tensor.device()));
    const double normal = smallestNormal(tensor.scalar_type());
    const auto x = tensor.detach().to(torch::kFloat64).flatten();
    const double inf = std::numeric_limits<double>::infinity();
    const auto finite = torch::isfinite(x);
    const auto count = finite.sum().to(torch::kFloat64);
    const auto finiteValues = torch::where(finite, x, torch::zeros_like(x));
    const auto mean = finiteValues.sum() / count.clamp_min(1);
    const auto deviation = torch::where(finite, x - mean, torch::zeros_like(x));
    const auto absolute = finiteValues.abs();
    return torch::stack({
        count,
        torch::isnan(x).sum().to(torch::kFloat64),
        (x == inf).sum().to(torch::kFloat64),
        (x == -inf).sum().to(torch::kFloat64),
        (x == 0).sum().to(torch::kFloat64),
        ((absolute < normal) & (absolute > 0)).sum().to(torch::kFloat64),
        torch::where(finite, x, torch::full_like(x, inf)).min(),
        torch::where(finite, x, torch::full_like(x, -inf)).max(),
        mean,
        (deviation * deviation).sum(),
        torch::where(absolute > 0, absolute, torch::full_like(x, inf)).min(),
    });
}

void fillFromSlots(const double* r, TensorStats& s)
{
    const auto count = int64_t(r[kCount]);
    s.nan = int64_t(r[kNan]);
    s.posinf = int64_t(r[kPosInf]);
    s.neginf = int64_t(r[kNegInf]);
    s.zero = int64_t(r[kZero]);
    s.subnormal = int64_t(r[kSubnormal]);
    if (count > 0) {
        s.min = r[kMin];
        s.max = r[kMax];
        s.mean = r[kMean];
        s.std = count > 1 ? std::sqrt(r[kM2] / double(count - 1)) : 0.0;
        s.norm = std::sqrt(r[kM2] + double(count) * r[kMean] * r[kMean]);
        s.absmax = std::max(std::fabs(r[kMin]), std::fabs(r[kMax]));
        if (std::isfinite(r[kNonzeroAbsmin]) && r[kNonzeroAbsmin] > 0)
            s.nonzeroAbsmin = r[kNonzeroAbsmin];
    }
}

void installStatsBackend()
{
    setTensorStatsBackend({cudaAvailable, computeWithTorch});
}

} // namespace nanscope::torchstats
