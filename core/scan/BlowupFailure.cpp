// Where a run's primary series failed (BlowupFailure.h).
#include "core/scan/BlowupFailure.h"

#include "core/scan/BlowupOnset.h"
#include "core/scan/Onset.h"
#include "core/scan/Recovery.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

std::vector<Burst> nonfiniteBursts(const ScanContext& context)
{
    const RunScalars& scalars = context.scalars;
    std::vector<Burst> bursts;
    for (size_t row = 0; row < scalars.steps.size(); ++row) {
        if (!scalars.rowNonfinite(row))
            continue;
        if (!bursts.empty() &&
            scalars.steps[row] - scalars.steps[bursts.back().lastRow] <= context.config.burstGapSteps) {
            bursts.back().lastRow = row;
            ++bursts.back().count;
        } else {
            bursts.push_back({row, row, 1});
        }
    }
    return bursts;
}

// Typical primary level before a row: median of the previous finite values.
double levelBefore(const ScanContext& context, size_t row)
{
    const LogSeries& s = context.scalars.primary();
    std::vector<double> values;
    for (size_t r = row; r-- > 0 && values.size() < size_t(context.config.spikeBaselineRows);)
        if (s.finite[r])
            values.push_back(s.log[r]);
    return medianOf(values);
}

bool recoveredAfter(const ScanContext& context, const Burst& burst)
{
    const RunScalars& scalars = context.scalars;
    const size_t begin = burst.lastRow + 1;
    const size_t end =
        std::min(scalars.steps.size(), begin + size_t(std::max<int64_t>(1, context.config.recoveryRows)));
    if (begin >= end) {
        // The log ends here: only the training's own word (a skipped step) says it went on, and
        // not for a burst longer than the recovery allows (every step skipped to the end for
        // recovery_rows steps is a training that cannot go on).
        if (scalars.steps[burst.lastRow] - scalars.steps[burst.firstRow] > context.config.recoveryRows)
            return false;
        for (size_t r = burst.firstRow; r <= burst.lastRow; ++r)
            if (!scalars.skippedAt(r) && scalars.rowNonfinite(r))
                return false;
        return true;
    }
    const LogSeries& s = scalars.primary();
    std::vector<double> after;
    for (size_t r = begin; r < end; ++r)
        if (!scalars.rowNonfinite(r))
            after.push_back(s.log[r]);
    if (after.size() * 2 < end - begin)
        return false;
    const double before = levelBefore(context, burst.firstRow);
    if (!std::isfinite(before) || medianOf(after) <= before + context.config.recoveryDecades)
        return true;
    // The primary series stays high (Adam keeps the gradient norm up for a while), but the loss
    // came back: the burst is over, the high level is what it left behind.
    return judgeRecovery(context, burst.firstRow, burst.lastRow).outcome == JumpOutcome::Recovered;
}

// A NaN that comes at the end of a finite explosion is that explosion's failure, even when
// the numbers look finite again afterwards: the weights it left behind are destroyed.
bool explodedBefore(const ScanContext& context, const Burst& burst)
{
    const LogSeries& s = context.scalars.primary();
    const size_t lead = size_t(std::max<int64_t>(context.config.jumpSteps, 2 * context.config.smoothingRows + 1));
    const size_t from = burst.firstRow >= lead ? burst.firstRow - lead : 0;
    const double before = levelBefore(context, from);
    double peak = -kInf;
    for (size_t r = from; r < burst.firstRow; ++r)
        if (s.finite[r])
            peak = std::max(peak, s.log[r]);
    if (std::isfinite(before) && std::isfinite(peak) && peak - before >= context.config.blowupDecades)
        return true;
    // The loss sat orders of magnitude above its best level for the rows before it, under a
    // clipped (or flat) gradient norm that showed nothing: the finite numbers after it are the
    // same divergence, not a recovery.
    const RunScalars& scalars = context.scalars;
    if (&s == &scalars.loss)
        return false;
    const size_t begin = rowAtOrAfter(scalars.steps, scalars.steps[burst.firstRow] - context.config.lookbackSteps);
    return lossDivergence(scalars.loss, begin, burst.firstRow, context.config.blowupDecades,
                          context.config.minOnsetDecades)
        .has_value();
}

// A finite explosion of blow-up size after which the gradient norm looks normal again but
// the loss never comes back: the update destroyed the weights (dead units, a collapsed output).
std::optional<Failure> destroyedByExplosion(const ScanContext& context)
{
    const ScanConfig& config = context.config;
    const LogSeries& loss = context.scalars.loss;
    const LogSeries& s = context.scalars.primary();
    const size_t settle = size_t(std::max<int64_t>(1, config.recoveryRows));
    for (size_t r = 1; r < s.size(); ++r) {
        if (!s.finite[r] || context.nearRecoveredBurst(r))
            continue;
        const double before = levelBefore(context, r);
        if (!(s.log[r] - before >= config.blowupDecades))
            continue;
        size_t end = r;
        while (end < s.size() && (!s.finite[end] || s.log[end] - before >= config.jumpDecades))
            ++end;
        // Judged on the loss where the loss jumped with it (Recovery.h): came back, a spike the
        // spike rule reports, however long the gradient norm stays up; did not, a blow-up at the jump.
        const JumpRecovery course = judgeRecovery(context, r, r);
        if (course.outcome == JumpOutcome::Recovered) {
            r = std::max(r, course.backRow);
            continue;
        }
        if (course.outcome == JumpOutcome::NotRecovered) {
            Failure failure;
            failure.row = r;
            failure.lastRow = std::min(end, s.size()) - 1;
            failure.note = "the loss did not come back after the explosion at step " +
                           std::to_string(context.scalars.steps[r]) + ": the update destroyed the weights";
            return failure;
        }
        auto lossMedian = [&](size_t from, size_t to) {
            std::vector<double> v;
            for (size_t k = from; k < to && k < loss.size(); ++k)
                if (loss.finite[k] && loss.raw[k] > 0)
                    v.push_back(loss.log[k]);
            return v.size() >= 5 ? medianOf(v) : kNaN;
        };
        const double lossBefore = lossMedian(r > 20 ? r - 20 : 0, r);
        const double lossAfter = lossMedian(end + settle, end + 3 * settle);
        // Destroyed: the loss stays up and does not fall again (dead weights), or it is back at
        // its level of the first steps (the model lost what it had learned). A loss that settles
        // higher but keeps falling below that is a spike the training recovered from, with a
        // changed plateau (the spike aftermath rule reports it).
        const double lossAtStart = lossMedian(0, std::min<size_t>(10, r));
        std::vector<double> x, y;
        for (size_t k = end + settle; k < end + 3 * settle && k < loss.size(); ++k)
            if (loss.finite[k] && loss.raw[k] > 0) {
                x.push_back(double(context.scalars.steps[k]));
                y.push_back(loss.log[k]);
            }
        // Still learning after it: the loss falls by kStillLearningDecades over those rows.
        const bool learning = x.size() >= 5 && theilSenSlope(x, y) * (x.back() - x.front()) <= -kStillLearningDecades;
        const bool lostTraining =
            !learning || !std::isfinite(lossAtStart) || lossAfter >= lossAtStart + kLostTrainingDecades;
        if (std::isfinite(lossBefore) && std::isfinite(lossAfter) && lossAfter - lossBefore >= kDeadLossDecades &&
            lostTraining) {
            Failure failure;
            failure.row = end;
            failure.note = "the gradient norm came back but the loss did not (" +
                           numberText(std::pow(10.0, lossAfter)) + " after, " +
                           numberText(std::pow(10.0, lossBefore)) + " before): the update destroyed the weights";
            failure.lastRow = end > 0 ? end - 1 : 0;
            return failure;
        }
        r = end;
    }
    return std::nullopt;
}

// No NaN, but a rise of orders of magnitude that does not come back, or one still going on at
// the end of a run being written (or cut short).
std::optional<Failure> finiteRise(const ScanContext& context)
{
    const ScanConfig& config = context.config;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const LogSeries& s = context.scalars.primary();
    const size_t n = s.size();
    const size_t tail = size_t(2 * config.smoothingRows + 1);
    if (n < 4 * tail)
        return std::nullopt;
    const size_t lookbackBegin = rowAtOrAfter(steps, steps.back() - config.lookbackSteps);
    std::vector<double> tailLogs, early;
    for (size_t r = n - tail; r < n; ++r)
        if (s.finite[r])
            tailLogs.push_back(s.log[r]);
    const size_t earlyEnd = lookbackBegin + (n - lookbackBegin) / 2;
    for (size_t r = lookbackBegin; r < earlyEnd; ++r)
        if (s.finite[r])
            early.push_back(s.log[r]);
    const double reference = medianOf(early);
    const double rise = medianOf(tailLogs) - reference;
    // The last rows all far above the reference: a run cut short (or still being written)
    // in the middle of its blow-up, too few rows yet for the tail median to show it.
    size_t stretch = n;
    while (stretch > earlyEnd && s.finite[stretch - 1] && s.log[stretch - 1] - reference >= config.blowupDecades)
        --stretch;
    Failure failure;
    if (n - stretch >= 2 && !(rise >= config.blowupDecades)) {
        failure.row = stretch;
        failure.note =
            "the log ends " + std::to_string(n - stretch) + " rows into the blow-up (cut short or still being written)";
        return failure;
    }
    if (!(rise >= config.blowupDecades)) {
        // A large rise still going on at the end of a run being written (or cut short).
        std::vector<double> x, y;
        for (size_t r = n - tail; r < n; ++r)
            if (s.finite[r]) {
                x.push_back(double(steps[r]));
                y.push_back(s.log[r]);
            }
        if (!(rise >= std::max(config.jumpDecades, config.blowupDecades - 1.0)) || !(theilSenSlope(x, y) > 0))
            return std::nullopt;
        failure.severity = Severity::Warning;
        failure.note = "still rising at the end of the log (" + numberText(rise, 2) + " decades so far)";
    }
    const double halfway = reference + 0.5 * rise;
    const std::vector<double> m = smoothed(s, lookbackBegin, n, config.smoothingRows);
    failure.row = lookbackBegin;
    for (size_t r = n; r-- > lookbackBegin;)
        if (m[r - lookbackBegin] < halfway) {
            failure.row = r + 1;
            break;
        }
    if (failure.row >= n)
        failure.row = n - 1;
    // A rise that began with a jump the loss came back from is a recovered spike whose gradient
    // norm stays high (Adam-family optimizers), not a blow-up: the spike rule reports it.
    for (size_t r = lookbackBegin; r < n; ++r)
        if (s.finite[r] && s.log[r] >= halfway) {
            if (judgeRecovery(context, r, r).outcome == JumpOutcome::Recovered)
                return std::nullopt;
            break;
        }
    return failure;
}

} // namespace nanscope::scan
