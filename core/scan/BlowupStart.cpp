// How a blow-up began (BlowupStart.h): the onset, the pattern and what they were read off.
#include "core/scan/BlowupStart.h"

#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

// A module's output or a parameter's norm that rose this many decades (x100) steadily up to the
// failure is where the blow-up began, even when the gradient norm shows nothing yet.
constexpr double kPrecursorDecades = 2.0;

// The earliest precursor (core/scan/Precursor.h), when it and not the primary series says where the
// blow-up began: it began more than a few steps before the primary's onset, or, a climb of orders
// of magnitude, the primary showed no blow-up of its own (within a jump of its baseline where the
// growth began and right up to the failure: attention logits growing into the float16 limit).
// Looked for further back than the primary's baseline: a temperature or a router's logits can
// climb for thousands of steps.
Result<std::optional<Precursor>> leadingPrecursor(const ScanContext& context, size_t failureRow, size_t onsetRow,
                                                  const Rise& rise, const std::optional<LossDivergence>& lossDiverged)
{
    const ScanConfig& config = context.config;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const LogSeries& s = context.scalars.primary();
    const int64_t failureStep = steps[failureRow];
    PrecursorSearch search;
    // Not past an earlier incident's burst: it is not the baseline.
    const int64_t afterBurst = context.burstRows.empty()
                                   ? steps.front()
                                   : steps[std::min(steps.size() - 1, context.burstRows.back().second + 1)];
    search.windowBeginStep =
        std::max(failureStep - std::max(config.precursorLookbackSteps, config.lookbackSteps), afterBurst);
    // A loss that visibly diverged: what grew while it was still improving is learning, and a
    // precursor must lead the loss's own climb.
    if (lossDiverged)
        search.windowBeginStep = std::max(search.windowBeginStep, steps[lossDiverged->bestRow]);
    search.failureStep = failureStep;
    search.minDecades = config.precursorDecades;
    search.strongDecades = kPrecursorDecades;
    search.minLeadSteps = std::max<int64_t>(4 * config.jumpSteps, 20);
    auto found = findPrecursor(context.inputs, config, search);
    if (!found || !*found)
        return found;
    const Precursor& p = **found;
    const int64_t margin = std::max<int64_t>(2 * config.jumpSteps, 5);
    if (lossDiverged)
        return p.onsetStep < steps[lossDiverged->climb.fromRow] - margin ? found : std::optional<Precursor>{};
    if (p.onsetStep < steps[onsetRow] - margin)
        return found;
    // A log-scale parameter that moved exp() of it by orders of magnitude explains a gradient norm
    // that climbed with it (gradients through exp(-log_std) scale with it): it is where the blow-up
    // lives, though it began a little after the gradient norm's own onset.
    if (p.expScaleDecades && *p.expScaleDecades >= kPrecursorDecades &&
        p.onsetStep <= steps[onsetRow] + std::max<int64_t>(margin, (failureStep - steps[onsetRow]) / 10))
        return found;
    const size_t growthRow = rowAtOrAfter(steps, p.onsetStep);
    std::vector<double> around, last;
    for (size_t r = growthRow > 2 ? growthRow - 2 : 0; r <= growthRow + 2 && r < failureRow; ++r)
        if (s.finite[r])
            around.push_back(s.log[r]);
    for (size_t r = failureRow; r-- > growthRow && last.size() < 5;)
        if (s.finite[r])
            last.push_back(s.log[r]);
    const bool primaryFlat = growthRow < failureRow && std::isfinite(rise.baseline) && !around.empty() &&
                             !last.empty() && medianOf(around) - rise.baseline < config.jumpDecades &&
                             medianOf(last) - rise.baseline < config.jumpDecades;
    if (std::max(p.riseDecades, p.expScaleDecades.value_or(0.0)) >= kPrecursorDecades && primaryFlat)
        return found;
    return std::optional<Precursor>{};
}

// How far `series` rose from its first nine finite rows in [from, to) to its last nine (x).
std::optional<double> riseBetweenEnds(const LogSeries& series, size_t from, size_t to)
{
    std::vector<double> first, last;
    for (size_t r = from; r < to && first.size() < 9; ++r)
        if (series.finite[r])
            first.push_back(series.log[r]);
    for (size_t r = to; r-- > from && last.size() < 9;)
        if (series.finite[r])
            last.push_back(series.log[r]);
    if (first.empty() || last.empty())
        return std::nullopt;
    return std::pow(10.0, medianOf(last) - medianOf(first));
}

// A gradual climb of the primary series under a learning rate that left its level and rose row
// after row up to the failure (a schedule that never stops growing): that climb of the step size
// is the departure the blow-up continues, and it began where the learning rate left its level;
// earlier than the primary's own onset (the gradient norm showed the growth only once the steps
// were large), or later, when the primary had not yet risen a jump by then (its onset was noise at
// the level). A precursor that began after the learning rate left its level is the climb's effect
// (attention scores that grew once the steps were large): the climb came first, and the precursor
// is where it showed. Nothing when the primary or a precursor grew first.
std::optional<Climb> learningRateLeftItsLevel(const ScanContext& context, const BlowupStart& b, const Failure& failure)
{
    const ScanConfig& config = context.config;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const LogSeries& s = context.scalars.primary();
    const size_t failureRow = failure.row;
    // Only for a gradual climb the start has not already put down to something else.
    if (b.sudden || b.onsetRow >= failureRow || b.bornInWeights || b.blamedInput || b.measuredOnLoss || b.lrClimb)
        return std::nullopt;
    const size_t endRow = failureRow > 0 && failure.nonfinite ? failureRow - 1 : failureRow;
    // Looked for as far back as a precursor (a slow climb of x1.01 a step takes hundreds of steps
    // to matter), not past an earlier incident's burst.
    const size_t lrWindowBegin = std::max(
        rowAtOrAfter(steps, steps[failureRow] - std::max(config.precursorLookbackSteps, config.lookbackSteps)),
        context.burstRows.empty() ? size_t(0) : context.burstRows.back().second + 1);
    auto climb = learningRateClimbFromLevel(context.scalars, std::min(lrWindowBegin, b.windowBegin), endRow);
    if (!climb)
        return std::nullopt;
    std::vector<double> around;
    for (size_t r = climb->fromRow > 2 ? climb->fromRow - 2 : 0; r <= climb->fromRow + 2 && r < failureRow; ++r)
        if (s.finite[r])
            around.push_back(s.log[r]);
    const bool risenBefore = climb->fromRow > b.onsetRow && !around.empty() && std::isfinite(b.rise.baseline) &&
                             medianOf(around) - b.rise.baseline >= config.jumpDecades;
    const int64_t margin = std::max<int64_t>(2 * config.jumpSteps, 5);
    const bool precursorFirst = b.precursor && b.precursor->onsetStep <= steps[climb->fromRow] + margin;
    if (risenBefore || precursorFirst)
        return std::nullopt;
    return climb;
}

} // namespace

Result<BlowupStart> judgeBlowupStart(const ScanContext& context, const Failure& failure)
{
    const ScanConfig& config = context.config;
    const RunScalars& scalars = context.scalars;
    const std::vector<int64_t>& steps = scalars.steps;
    const LogSeries& s = scalars.primary();
    const size_t failureRow = failure.row;
    const int64_t failureStep = steps[failureRow];
    BlowupStart b;
    b.windowBegin = rowAtOrAfter(steps, failureStep - config.lookbackSteps);
    // Do not look back past an earlier incident's burst: it is not the baseline.
    if (!context.burstRows.empty()) {
        const size_t afterBurst = context.burstRows.back().second + 1;
        if (afterBurst > b.windowBegin && afterBurst < failureRow)
            b.windowBegin = afterBurst;
    }
    const size_t windowBegin = b.windowBegin;
    b.lastRow = std::min(s.size() - 1, failure.lastRow     ? *failure.lastRow
                                       : failure.nonfinite ? failureRow
                                                           : s.size() - 1);
    b.rise = findOnset(s, windowBegin, failureRow, config);
    const Rise& rise = b.rise;
    const std::optional<Jump> jump = suddenJump(context, windowBegin, failureRow, b.lastRow, rise);
    b.sudden = jump.has_value();
    b.onsetRow = b.sudden ? jump->row : std::min(rise.onsetRow, failureRow);
    b.baseline = b.sudden ? jump->baseline : rise.baseline;

    b.blamedInput = context.badInputNear(steps[b.onsetRow], 1, 0);
    // A batch with extreme values (a missing feature read as zeros) may be what met the 0/0; only
    // a batch holding NaN/Inf itself puts the origin in the data.
    b.nanInput = b.blamedInput && b.blamedInput->severity == Severity::Critical;
    auto judgedOrigin = judgeNonfiniteOrigin(context, failure, windowBegin, b.nanInput, rise.onsetRow < failureRow);
    if (!judgedOrigin)
        return Error{judgedOrigin.error()};
    b.born = std::move(*judgedOrigin);
    b.origin = b.born.origin;
    b.bornInWeights = b.born.bornInWeights;
    // A loss that visibly diverged from its best level, under a gradient norm that need not show
    // it (clipped): a precursor must lead that climb too, or it is the learning before it.
    const std::optional<LossDivergence> lossDiverged =
        &s == &scalars.loss ? std::nullopt
                            : lossDivergence(scalars.loss, windowBegin, failureRow, config.blowupDecades,
                                             config.minOnsetDecades);
    // Weights gone non-finite rows apart, with no exactly-zero gradient among them at the row
    // before, may have been written by a forward pass's NaN at an unlogged step: a precursor that
    // climbed up to the failure is then the better account of it.
    const bool updateUncertain =
        b.born.spreadBetweenRows || (!b.born.updateStepExact && b.born.zeroGradientParameters.empty());
    if ((!b.bornInWeights || updateUncertain) && !b.blamedInput) {
        auto found = leadingPrecursor(context, failureRow, b.onsetRow, rise, lossDiverged);
        if (!found)
            return Error{found.error()};
        if (*found) {
            // The onset is read off the found precursor, not the optional it is copied into:
            // GCC 12 warns the optional's member "may be used uninitialized" there.
            b.onsetRow = rowAtOrAfter(steps, (*found)->onsetStep);
            b.precursor = *found;
            b.sudden = false;
            b.baseline = rise.baseline;
            b.bornInWeights = false;
            if (updateUncertain)
                b.origin.reset(); // the weights were non-finite by then, but the growth came first
        }
    }
    if (b.bornInWeights) {
        // One update did it: the one of the last logged step whose weights were finite. The noise
        // before it is not an onset.
        b.sudden = true;
        b.onsetRow = b.born.updateStep && b.born.updateStepExact ? failureRow - 1 : failureRow;
        b.baseline = levelBefore(context, failureRow);
    }
    // The median of up to 9 finite rows of `series` from the onset: the level a climb began at.
    auto levelFromOnset = [&](const LogSeries& series) {
        std::vector<double> start;
        for (size_t r = b.onsetRow; r < failureRow && start.size() < 9; ++r)
            if (series.finite[r])
                start.push_back(series.log[r]);
        return start.empty() ? rise.baseline : medianOf(start);
    };
    // A "sudden" failure of the gradient norm that the loss and the parameter norm climbed to for
    // hundreds of steps is gradual: the logged norm was clipped, or flat. The growth is then
    // measured on the loss: its baseline and slope are the loss's, and so is the series the
    // evidence names, so that the fitted trend is drawn on the loss plot, through the loss.
    // So is one where the primary showed neither a jump nor a rise (no onset before the failure).
    const bool primaryShowsNoClimb = b.sudden || b.onsetRow >= failureRow;
    if (primaryShowsNoClimb && !b.bornInWeights && !b.precursor && !b.blamedInput && !scalars.gradNorm.empty()) {
        b.lossClimb = steadyClimb(scalars.loss.raw, windowBegin, failureRow);
        if (!b.lossClimb)
            b.lossClimb = lossDiverged ? std::optional<Climb>(lossDiverged->climb) : std::nullopt; // accelerating
        if (b.lossClimb && context.inputs.hasDataset(rf::kScalars, rf::scalar::kParamNorm))
            if (auto norms = context.inputs.readSeries(rf::kScalars, rf::scalar::kParamNorm))
                b.paramClimb = steadyClimb(*norms, windowBegin, failureRow);
        if (b.lossClimb) {
            b.sudden = false;
            b.onsetRow = b.lossClimb->fromRow;
            b.measuredOnLoss = true;
            b.baseline = levelFromOnset(scalars.loss);
            b.primaryRise = riseBetweenEnds(s, b.onsetRow, failureRow);
        }
    }
    // A jump at the top of a learning rate that climbed row after row is the end of a gradual
    // climb in the step size (the updates grew with it), not one bad batch: gradual from where the
    // learning rate began to climb.
    // Read again, not primaryShowsNoClimb: a loss climb found above has set an onset by now.
    if ((b.sudden || b.onsetRow >= failureRow) && !b.bornInWeights && !b.precursor && !b.blamedInput) {
        b.lrClimb = learningRateClimb(scalars, windowBegin, b.onsetRow);
        if (b.lrClimb) {
            b.sudden = false;
            b.onsetRow = b.lrClimb->fromRow;
            b.baseline = levelFromOnset(s);
        }
    }
    if (auto climb = learningRateLeftItsLevel(context, b, failure)) {
        b.lrClimb = climb;
        b.onsetRow = climb->fromRow;
        b.baseline = levelFromOnset(s);
    }
    b.onsetStep = b.precursor && !b.lrClimb ? b.precursor->onsetStep : steps[b.onsetRow];
    return b;
}

} // namespace nanscope::scan
