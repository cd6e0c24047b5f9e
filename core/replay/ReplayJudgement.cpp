#include "core/replay/ReplayJudgement.h"

#include "core/replay/ReplaySignatures.h"
#include "core/run/LayerNames.h"

#include <algorithm>

namespace nanscope {

namespace {
bool anyNonfinite(const std::vector<std::optional<TensorStats>>& values)
{
    return std::any_of(values.begin(), values.end(), [](const std::optional<TensorStats>& s) { return hasNonfinite(s); });
}
} // namespace

std::optional<ReplayOp> forwardCulprit(const std::vector<ReplayOp>& ops, std::vector<std::string>& notes)
{
    std::optional<ReplayOp> culprit;
    for (const auto& op : ops) {
        if (!hasNonfinite(op.output))
            continue;
        if (!anyNonfinite(op.inputs))
            return op;
        if (!culprit)
            culprit = op;
    }
    if (culprit)
        notes.push_back("every non-finite output has a non-finite input: the NaN/Inf was already in the model's state "
                        "(a parameter or buffer) or in the batch");
    return culprit;
}

std::optional<ReplayOp> firstNonfiniteGradient(const std::vector<ReplayOp>& ops)
{
    for (size_t i = ops.size(); i-- > 0;)
        if (hasNonfinite(ops[i].grad))
            return ops[i];
    return std::nullopt;
}

std::vector<ReplayOp> opsWithinLayer(std::vector<ReplayOp> ops, const std::string& prefix, int culpritIndex)
{
    if (prefix.empty())
        return ops;
    std::vector<ReplayOp> listed;
    for (auto& op : ops)
        if (layernames::isWithin(op.module, prefix) || op.index == culpritIndex)
            listed.push_back(std::move(op));
    return listed;
}

void judgeReplayOps(ReplayResult& result, std::vector<ReplayOp> allOps, const std::string& layerPrefix)
{
    for (auto& op : allOps)
        op.headroom = precisionHeadroomOf(op.output);
    if (result.lossOp)
        result.lossOp->headroom = precisionHeadroomOf(result.lossOp->output);
    result.firstNonfinite = forwardCulprit(allOps, result.notes);
    result.firstNonfiniteGrad = firstNonfiniteGradient(allOps);
    result.findings = judgeReplaySignatures(allOps, result.lossOp);
    result.ops = opsWithinLayer(std::move(allOps), layerPrefix, result.firstNonfinite ? result.firstNonfinite->index : -1);
}

} // namespace nanscope
