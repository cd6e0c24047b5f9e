#include "core/torch/SoftmaxMeasures.h"

#include <torch/csrc/jit/ir/constants.h>

#include <limits>

namespace nanscope::replaytorch {

using torch::jit::Node;

bool isSoftmax(const Node* node)
{
    const auto kind = node->kind();
    return kind == c10::aten::softmax || kind == c10::aten::_softmax || isLogSoftmax(node);
}

bool isLogSoftmax(const Node* node)
{
    return node->kind() == c10::aten::log_softmax || node->kind() == c10::aten::_log_softmax;
}

std::optional<double> meanRowEntropy(const torch::Tensor& output, int64_t dim, bool logProbabilities)
{
    torch::NoGradGuard noGrad;
    const torch::Tensor x = output.detach().to(torch::kDouble);
    if (x.dim() == 0 || x.size(dim) == 0)
        return std::nullopt;
    const torch::Tensor p = logProbabilities ? x.exp() : x;
    const torch::Tensor logP = logProbabilities ? x : x.log();
    const torch::Tensor entropy = -torch::where(p > 0, p * logP, torch::zeros_like(p)).sum(dim);
    const torch::Tensor valid = (~torch::isnan(x) & (x != std::numeric_limits<double>::infinity())).all(dim);
    const int64_t rows = valid.sum().item<int64_t>();
    if (rows == 0)
        return std::nullopt;
    return torch::where(valid, entropy, torch::zeros_like(entropy)).sum().item<double>() / double(rows);
}

LogitsSignature logZOf(const torch::Tensor& logits, int64_t dim, std::string from, int opIndex)
{
    torch::NoGradGuard noGrad;
    LogitsSignature signature;
    signature.from = std::move(from);
    signature.opIndex = opIndex;
    // logsumexp subtracts each row's maximum first, so float32 holds log Z of any finite logits;
    // float64 only for float64 logits (a pass in double cost a replay more than its op statistics).
    torch::Tensor x = logits.detach();
    x = x.to(x.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat);
    if (x.dim() == 0)
        x = x.reshape({1, 1});
    else
        x = x.movedim(dim, -1).reshape({-1, x.size(dim)});
    if (x.numel() == 0)
        return signature;
    const torch::Tensor logZ = torch::logsumexp(x, -1);
    const torch::Tensor finite = logZ.masked_select(torch::isfinite(logZ));
    signature.rows = finite.numel();
    if (signature.rows > 0) {
        signature.logZMean = finite.mean().item<double>();
        signature.logZMin = finite.min().item<double>();
        signature.logZMax = finite.max().item<double>();
    }
    return signature;
}

} // namespace nanscope::replaytorch
