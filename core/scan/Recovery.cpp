// Whether training came back from a jump, read on the loss (see Recovery.h).
#include "core/scan/Recovery.h"

#include "core/scan/RobustStats.h"
#include "core/scan/ScanContext.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nanscope::scan {

namespace {

// Finite rows whose median must be back in the band for the loss to count as back: one lucky
// batch is not a recovery.
constexpr size_t kBackRows = 5;
// Rows from there over which the loss must stay finite and, by their median, in its band.
constexpr size_t kStayRows = 50;
// Rows of the first steps that give the loss's level before training.
constexpr size_t kStartRows = 10;

// Median of up to `count` finite rows before `row`; NaN with fewer than 3.
double medianBefore(const LogSeries& s, size_t row, size_t count)
{
    std::vector<double> values;
    for (size_t r = std::min(row, s.size()); r-- > 0 && values.size() < count;)
        if (s.finite[r])
            values.push_back(s.log[r]);
    return values.size() >= 3 ? medianOf(values) : kNaN;
}

} // namespace

JumpRecovery judgeRecovery(const ScanContext& context, size_t firstRow, size_t lastRow)
{
    const ScanConfig& config = context.config;
    const LogSeries& loss = context.scalars.loss;
    JumpRecovery result;
    if (loss.empty() || firstRow >= loss.size() || lastRow < firstRow)
        return result;
    const size_t baselineRows = size_t(std::max<int64_t>(3, config.spikeBaselineRows));
    const size_t from = firstRow > baselineRows ? firstRow - baselineRows : 0;
    const size_t to = std::min(loss.size(), lastRow + 1 + kBackRows + kStayRows + size_t(std::max<int64_t>(0, config.recoveryRows)));
    // A loss that is not positive (a log-likelihood, a reward) has no band on a log scale.
    for (size_t r = from; r < to; ++r)
        if (loss.finite[r] && !(loss.raw[r] > 0))
            return result;
    const double before = medianBefore(loss, firstRow, baselineRows);
    if (!std::isfinite(before))
        return result;
    // The loss jumped with it: non-finite, or spike_decades above its level, at a row of the jump or
    // the row after (the loss of a step shows the update of the step before).
    bool jumped = false;
    for (size_t r = firstRow; r <= std::min(lastRow + 1, loss.size() - 1); ++r)
        jumped = jumped || !loss.finite[r] || loss.log[r] - before >= config.spikeDecades;
    if (!jumped)
        return result;

    const double band = before + config.recoveryDecades;
    std::optional<size_t> back;
    std::vector<double> window;
    for (size_t r = lastRow + 1; r < loss.size() && !back; ++r) {
        window.clear();
        for (size_t k = r; k < loss.size() && window.size() < kBackRows; ++k) {
            if (!loss.finite[k]) {
                result.outcome = JumpOutcome::NotRecovered; // non-finite before it came back
                return result;
            }
            window.push_back(loss.log[k]);
        }
        if (window.size() < kBackRows)
            break;
        if (medianOf(window) <= band)
            back = r;
    }
    if (!back) {
        // Enough of the log after the jump to say it did not come back: recovery_rows rows, or, where
        // the loss is logged every few steps, as many steps as that (and at least kBackRows rows):
        // 15 rows logged every 10 steps are 150 steps of a loss that stayed up, not too few to tell.
        const size_t rowsAfter = loss.size() - std::min(loss.size(), lastRow + 1);
        const auto wantedRows = size_t(std::max<int64_t>(int64_t(kBackRows), config.recoveryRows));
        const int64_t stepsAfter = rowsAfter > 0 ? context.scalars.steps[loss.size() - 1] - context.scalars.steps[lastRow] : 0;
        const bool enough = rowsAfter >= wantedRows || (rowsAfter >= kBackRows && stepsAfter >= config.recoveryRows);
        result.outcome = enough ? JumpOutcome::NotRecovered : JumpOutcome::LogEnded;
        return result;
    }
    std::vector<double> stay, x;
    for (size_t r = *back; r < loss.size() && stay.size() < kStayRows; ++r) {
        if (!loss.finite[r]) {
            result.outcome = JumpOutcome::NotRecovered;
            return result;
        }
        stay.push_back(loss.log[r]);
        x.push_back(double(context.scalars.steps[r]));
    }
    const double after = medianOf(stay);
    // Lost what it had learned: back at the level of the first steps, well above the level before
    // the jump, and no longer falling.
    const double atStart = firstRow >= 5 ? medianBefore(loss, std::min(kStartRows, firstRow), kStartRows) : kNaN;
    const bool learning = stay.size() >= 5 && theilSenSlope(x, stay) * (x.back() - x.front()) <= -kStillLearningDecades;
    const bool lostTraining = std::isfinite(atStart) && after - before >= kDeadLossDecades &&
                              after >= atStart + kLostTrainingDecades && !learning;
    result.outcome = after <= band && !lostTraining ? JumpOutcome::Recovered : JumpOutcome::NotRecovered;
    result.backRow = *back;
    return result;
}

std::optional<double> gradientLevelLeftBehind(const ScanContext& context, size_t firstRow, size_t backRow)
{
    const LogSeries& grad = context.scalars.gradNorm;
    if (grad.empty() || backRow >= grad.size())
        return std::nullopt;
    const double before = medianBefore(grad, firstRow, size_t(std::max<int64_t>(3, context.config.spikeBaselineRows)));
    std::vector<double> after;
    for (size_t r = backRow; r < grad.size() && after.size() < kStayRows; ++r)
        if (grad.finite[r])
            after.push_back(grad.log[r]);
    if (!std::isfinite(before) || after.size() < kBackRows)
        return std::nullopt;
    const double rise = medianOf(after) - before;
    if (!(rise >= context.config.recoveryDecades))
        return std::nullopt;
    return std::pow(10.0, rise);
}

} // namespace nanscope::scan
