#pragma once

// Internal to core: value-range statistics of a tensor, as /activations, /inputs and /buffers log them.

#include <torch/torch.h>

namespace nanscope::torchutil {

struct RangeStats
{
    float min = NAN, max = NAN, mean = NAN, std = NAN; // over the finite elements; NaN if none
    float nan = 0, inf = 0;                             // element counts
};

inline RangeStats rangeStats(const torch::Tensor& tensor)
{
    torch::NoGradGuard noGrad;
    RangeStats s;
    const auto values = tensor.detach().to(torch::kFloat64).flatten();
    const auto nanMask = torch::isnan(values);
    const auto infMask = torch::isinf(values);
    s.nan = float(nanMask.sum().item<int64_t>());
    s.inf = float(infMask.sum().item<int64_t>());
    const auto finite = values.masked_select(~(nanMask | infMask));
    if (finite.numel() > 0) {
        s.min = float(finite.min().item<double>());
        s.max = float(finite.max().item<double>());
        s.mean = float(finite.mean().item<double>());
        s.std = finite.numel() > 1 ? float(finite.std().item<double>()) : 0.f;
    }
    return s;
}

inline float nonfiniteCount(const torch::Tensor& tensor)
{
    torch::NoGradGuard noGrad;
    return float((~torch::isfinite(tensor.detach())).sum().item<int64_t>());
}

} // namespace nanscope::torchutil
