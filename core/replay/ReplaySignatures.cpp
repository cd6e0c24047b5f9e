#include "core/replay/ReplaySignatures.h"

#include <limits>

#include "core/scan/Diagnosis.h"

namespace nanscope {

namespace {
scan::ReplayOpName nameOf(const ReplayOp& op)
{
    return {op.index, op.op, op.module};
}

void add(std::vector<ReplayFinding>& findings, ReplaySignal signal, int opIndex, scan::Diagnosis diagnosis)
{
    findings.push_back({signal, opIndex, std::move(diagnosis.cause), std::move(diagnosis.suggestion)});
}
} // namespace

bool lowFloat16Headroom(const PrecisionHeadroom& headroom)
{
    return headroom.float16Bits && nearFloat16LimitBits(*headroom.float16Bits);
}

bool attentionLogitsGrown(const SoftmaxSignature& softmax, size_t inputDims)
{
    return inputDims >= 3 && softmax.inputAbsmax >= kAttentionLogitAbsmax && softmax.entropy &&
           *softmax.entropy < kAttentionEntropyShare * softmax.uniformEntropy;
}

// A mask fill: a value exactly at a float type's largest finite magnitude is what
// masked_fill(scores, mask, finfo.min) writes, never what arithmetic on data lands on.
bool isMaskFill(double absmax)
{
    return absmax == double(std::numeric_limits<float>::max()) || absmax == kFloat16Max || absmax == kBFloat16Max;
}

// The ops whose values say something about the data: not masks, not constants.
bool isAboutTheData(const ReplayOp& op)
{
    return op.fromData && !(op.output && isMaskFill(op.output->absmax));
}

std::vector<ReplayFinding> judgeReplaySignatures(const std::vector<ReplayOp>& ops, const std::optional<ReplayOp>& lossOp)
{
    std::vector<ReplayFinding> findings;

    const ReplayOp* worstSoftmax = nullptr;
    size_t grownCalls = 0;
    for (const ReplayOp& op : ops) {
        const size_t dims = op.output ? op.output->shape.size() : 0; // a softmax keeps its input's shape
        if (!op.softmax || !op.fromData || isMaskFill(op.softmax->inputAbsmax) || !attentionLogitsGrown(*op.softmax, dims))
            continue;
        ++grownCalls;
        if (!worstSoftmax || op.softmax->inputAbsmax > worstSoftmax->softmax->inputAbsmax)
            worstSoftmax = &op;
    }
    if (worstSoftmax)
        add(findings, ReplaySignal::AttentionLogits, worstSoftmax->index,
            scan::diagnoseReplayAttentionLogits({nameOf(*worstSoftmax), worstSoftmax->softmax->inputAbsmax,
                                                 *worstSoftmax->softmax->entropy, worstSoftmax->softmax->uniformEntropy,
                                                 grownCalls}));

    if (lossOp) {
        std::optional<DType> lowPrecision;
        auto check = [&](const std::optional<TensorStats>& value) {
            if (value && !lowPrecision && (value->dtype == DType::Float16 || value->dtype == DType::BFloat16))
                lowPrecision = value->dtype;
        };
        for (const auto& input : lossOp->inputs)
            check(input);
        check(lossOp->output);
        if (lowPrecision)
            add(findings, ReplaySignal::LossInLowPrecision, lossOp->index,
                scan::diagnoseReplayLossInLowPrecision({nameOf(*lossOp), dtypeName(*lowPrecision)}));
    }

    const ReplayOp* firstLow = nullptr;
    size_t lowOps = 0;
    for (const ReplayOp& op : ops)
        if (isAboutTheData(op) && lowFloat16Headroom(op.headroom)) {
            ++lowOps;
            if (!firstLow)
                firstLow = &op;
        }
    if (firstLow)
        add(findings, ReplaySignal::Float16Headroom, firstLow->index,
            scan::diagnoseReplayFloat16Headroom({nameOf(*firstLow), firstLow->output->absmax, *firstLow->headroom.float16Bits,
                                                 kNearFloat16Bits, lowOps, dtypeName(firstLow->output->dtype)}));
    return findings;
}

} // namespace nanscope
