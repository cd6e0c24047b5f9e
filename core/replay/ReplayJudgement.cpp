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

// The same tensor, as far as its statistics tell: an op's output read again as another op's input.
bool sameValue(const TensorStats& a, const TensorStats& b)
{
    return a.shape == b.shape && a.nan == b.nan && a.posinf == b.posinf && a.neginf == b.neginf && a.min == b.min &&
           a.max == b.max && a.norm == b.norm;
}

// Where `op`'s non-finite input came from: the earlier op whose output it is (followed back while
// that op's own inputs are not finite either: CLIP's exp of its learned temperature, scaled, then
// multiplying the logits), else `op` itself (the NaN was in a parameter, a buffer or the batch).
const ReplayOp* originOfNonfiniteInputs(const std::vector<ReplayOp>& ops, const ReplayOp& op)
{
    const ReplayOp* origin = &op;
    for (;;) {
        const ReplayOp* producer = nullptr;
        for (const auto& input : origin->inputs) {
            if (!hasNonfinite(input))
                continue;
            for (const auto& earlier : ops) // the earliest: a view of a value repeats its statistics
                if (earlier.index < origin->index && hasNonfinite(earlier.output) && sameValue(*earlier.output, *input)) {
                    producer = &earlier;
                    break;
                }
            if (producer)
                break;
        }
        if (!producer)
            return origin;
        origin = producer;
        if (!anyNonfinite(origin->inputs))
            return origin;
    }
}
} // namespace

std::optional<ReplayOp> forwardCulprit(const std::vector<ReplayOp>& ops, std::vector<std::string>& notes)
{
    const ReplayOp* firstData = nullptr;  // the first op computed from the batch whose output is not finite
    const ReplayOp* structural = nullptr; // the first computed from constants and weights alone
    for (const auto& op : ops) {
        if (!hasNonfinite(op.output))
            continue;
        if (op.fromData) {
            if (!anyNonfinite(op.inputs))
                return op;
            if (!firstData)
                firstData = &op;
        } else if (!structural) {
            structural = &op;
        }
    }
    if (!firstData && !structural)
        return std::nullopt;
    if (!firstData) {
        // T5's relative-position buckets take log(0) = -inf on purpose and cast it to an index; a
        // mask fills -inf. Such a value is the model's design, the same at every step: the fault
        // only when something computed from the batch went non-finite with it.
        notes.push_back("op #" + std::to_string(structural->index) + " " + structural->op +
                        (structural->module.empty() ? "" : " in '" + structural->module + "'") + " at " +
                        structural->source + " made " + nonfiniteCountsText(structural->output) +
                        " from constants and weights alone (a mask or a position table, by design), and no value "
                        "computed from the batch went non-finite: not a fault");
        return std::nullopt;
    }
    const ReplayOp* origin = originOfNonfiniteInputs(ops, *firstData);
    if (anyNonfinite(origin->inputs))
        notes.push_back("every non-finite output has a non-finite input: the NaN/Inf was already in the model's "
                        "state (a parameter or buffer) or in the batch");
    return *origin;
}

void nameTheStateTheCulpritRead(ReplayResult& result)
{
    if (!result.firstNonfinite)
        return;
    const ReplayOp& culprit = *result.firstNonfinite;
    for (size_t i = 0; i < culprit.inputs.size(); ++i) {
        const auto& input = culprit.inputs[i];
        if (!hasNonfinite(input))
            continue;
        for (const auto& parameter : result.params)
            if (parameter.value && sameValue(*parameter.value, *input)) {
                result.notes.push_back("op #" + std::to_string(culprit.index) + " " + culprit.op + " read the parameter " +
                                       parameter.name + " as its input " + std::to_string(i) + ", which held " +
                                       nonfiniteCountsText(input) + " before this step: the NaN/Inf was in the weights");
                return;
            }
    }
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
