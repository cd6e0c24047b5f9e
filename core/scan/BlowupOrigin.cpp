#include "core/scan/BlowupOrigin.h"

#include "core/run/RunFormat.h"
#include "core/scan/BlowupOnset.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// The gradient norms logged at `step` (/layers), by parameter; empty when that row is not logged.
Result<std::vector<float>> gradientsAt(const ScanInputs& inputs, int64_t step)
{
    if (!inputs.hasDataset(rf::kLayers, rf::column::kGradNorm))
        return std::vector<float>{};
    const auto& steps = inputs.steps(rf::kLayers);
    const size_t row = rowAtOrAfter(steps, step);
    if (row >= steps.size() || steps[row] != step || int64_t(row) >= inputs.table(rf::kLayers)->rows)
        return std::vector<float>{};
    return inputs.readBlock(rf::kLayers, rf::column::kGradNorm, int64_t(row), 1);
}

} // namespace

Result<OriginJudgement> judgeNonfiniteOrigin(const ScanContext& context, const Failure& failure, size_t windowBegin,
                                             bool nanInput, bool primaryRose)
{
    OriginJudgement judged;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const size_t failureRow = failure.row;
    const int64_t failureStep = steps[failureRow];
    judged.stableBefore = stableUntil(context.scalars.primary(), windowBegin, failureRow);
    if (!failure.nonfinite)
        return judged;
    auto bad = nonfiniteParametersAt(context.inputs, failureStep);
    if (!bad)
        return Error{bad.error()};
    if (!*bad)
        return judged;
    judged.nanParameters = **bad;
    judged.origin = judged.nanParameters.empty() ? NonfiniteOrigin::Forward : NonfiniteOrigin::Parameters;
    if (judged.origin != NonfiniteOrigin::Parameters)
        return judged;
    const TableInfo* layers = context.inputs.table(rf::kLayers);
    judged.everyParameter = layers && judged.nanParameters.size() >= layers->names.size();
    judged.spreadBetweenRows = judged.everyParameter && failureRow > 0 && steps[failureRow] - steps[failureRow - 1] > 1;
    // The weights logged at the row before were all finite, and that row's loss and gradient norm
    // too (it is before the first non-finite row): the update in between wrote the NaN.
    if (failureRow > 0) {
        const int64_t before = steps[failureRow - 1];
        auto earlier = nonfiniteParametersAt(context.inputs, before);
        if (!earlier)
            return Error{earlier.error()};
        if (*earlier && (*earlier)->empty()) {
            judged.updateStep = before;
            judged.updateStepExact = before == failureStep - 1;
        }
    }
    // In the first rows there is no stretch to call stable, but weights finite at the row before and
    // non-finite at this one were written by the update in between all the same. A batch holding
    // NaN/Inf itself puts the origin in the data instead.
    // Weights finite at the row before are enough at any step (a block unfrozen while the loss still
    // falls), unless the primary series climbed toward the failure (a gradual blow-up whose NaN
    // reached the weights) or every parameter went at once between rows apart (it may have spread
    // from an unlogged forward pass).
    const bool updateSeen = judged.updateStep && !primaryRose && !judged.spreadBetweenRows;
    judged.bornInWeights =
        !nanInput && (updateSeen || judged.stableBefore || (failureRow > 0 && failureRow <= 2));
    if (judged.bornInWeights && judged.updateStep) {
        auto gradients = gradientsAt(context.inputs, *judged.updateStep);
        if (!gradients)
            return Error{gradients.error()};
        for (size_t c = 0; c < gradients->size() && c < layers->names.size(); ++c)
            if ((*gradients)[c] == 0.0f &&
                std::find(judged.nanParameters.begin(), judged.nanParameters.end(), layers->names[c]) !=
                    judged.nanParameters.end())
                judged.zeroGradientParameters.push_back(layers->names[c]);
    }
    return judged;
}

} // namespace nanscope::scan
