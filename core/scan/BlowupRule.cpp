// Non-finite values in the loss or gradient norm, and blow-ups. Non-finite rows close in steps
// form bursts; a burst the training recovered from is a NonfiniteLoss incident, the first one it
// did not recover from is the failure of a blow-up. Without NaN, a rise of blow-up size that does
// not come back (or a finite explosion that left the loss destroyed) is a blow-up too.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/scan/Onset.h"
#include "core/scan/Recovery.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

// A module's output or a parameter's norm that rose this many decades (x100) steadily up to the
// failure is where the blow-up began, even when the gradient norm shows nothing yet.
constexpr double kPrecursorDecades = 2.0;
// The primary series within this of its level before (x2) right up to a failure: it was stable.
constexpr double kStableDecades = 0.3;

struct Burst
{
    size_t firstRow = 0;
    size_t lastRow = 0;
    int64_t count = 0;
};

// Where a blow-up failed, as the searches below found it.
struct Failure
{
    size_t row = 0;         // the first non-finite row, or where the finite rise crossed halfway
    bool nonfinite = false; // it ended in NaN/Inf (not a finite rise)
    Severity severity = Severity::Critical;
    std::string note;
    // The last row of the explosion, when it is neither the failure row nor the end of the log.
    std::optional<size_t> lastRow;
};

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
    return std::isfinite(before) && std::isfinite(peak) && peak - before >= context.config.blowupDecades;
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
                           formatNumber(std::pow(10.0, lossAfter)) + " after, " +
                           formatNumber(std::pow(10.0, lossBefore)) + " before): the update destroyed the weights";
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
        failure.note = "still rising at the end of the log (" + formatNumber(rise, 2) + " decades so far)";
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

struct Jump
{
    size_t row = 0;
    double baseline = kNaN; // log10
};

// The sudden case, read directly: one step up by jump_decades (or into NaN) near the failure
// that stays up until `lastRow`, from a level that was still the baseline, and no rise began well
// before it (a gradual blow-up can end in a jump). Noise and small level shifts just before such
// a jump must not move its onset.
std::optional<Jump> suddenJump(const ScanContext& context, size_t windowBegin, size_t failureRow, size_t lastRow,
                               const Rise& rise)
{
    const ScanConfig& config = context.config;
    const LogSeries& s = context.scalars.primary();
    const size_t h = size_t(config.smoothingRows);
    const size_t searchFrom = std::max(windowBegin + 1, failureRow > 20 ? failureRow - 20 : size_t(1));
    for (size_t r = searchFrom; r <= lastRow && r < s.size(); ++r) {
        if (!s.finite[r - 1])
            continue;
        const double before = s.log[r - 1];
        if (s.finite[r] && s.log[r] - before < config.jumpDecades)
            continue;
        bool sustained = true;
        for (size_t k = r; k <= lastRow && k < s.size() && sustained; ++k)
            sustained = !s.finite[k] || s.log[k] - before >= config.jumpDecades;
        if (!sustained || r < windowBegin + h + 6 || rise.onsetRow + 2 * h < r)
            continue;
        std::vector<double> pre, reference;
        for (size_t k = r - h - 1; k < r; ++k)
            if (s.finite[k])
                pre.push_back(s.log[k]);
        const size_t referenceEnd = r - h - 1;
        const size_t referenceBegin = referenceEnd >= windowBegin + size_t(config.baselineRows)
                                          ? referenceEnd - size_t(config.baselineRows)
                                          : windowBegin;
        for (size_t k = referenceBegin; k < referenceEnd; ++k)
            if (s.finite[k])
                reference.push_back(s.log[k]);
        if (pre.empty() || reference.size() < 5)
            continue;
        const double level = medianOf(reference);
        std::vector<double> deviations = reference;
        const double noise = noiseAroundInPlace(deviations, level);
        // The rows just before the jump were still at the baseline (within half a jump, or
        // the noise of their median): nothing was growing yet.
        if (medianOf(pre) - level <=
            std::max(0.5 * config.jumpDecades, config.noiseSigmas * noise / std::sqrt(double(pre.size()))))
            return Jump{r, level};
    }
    return std::nullopt;
}

// The primary series was at its level right up to the failure row: the median of the last few
// finite rows is within kStableDecades of the median of the rows before them.
bool stableUntil(const LogSeries& s, size_t windowBegin, size_t failureRow)
{
    std::vector<double> recent, before;
    for (size_t r = failureRow; r-- > windowBegin;) {
        if (!s.finite[r])
            return false;
        if (recent.size() < 3)
            recent.push_back(s.log[r]);
        else if (before.size() < 50)
            before.push_back(s.log[r]);
        else
            break;
    }
    return recent.size() == 3 && before.size() >= 5 && medianOf(recent) - medianOf(before) <= kStableDecades;
}

// Steps by which the gradient norm's rise toward the failure began before the loss's.
std::optional<int64_t> gradientLead(const ScanContext& context, size_t windowBegin, size_t failureRow)
{
    const RunScalars& scalars = context.scalars;
    if (scalars.gradNorm.empty() || scalars.loss.empty() || failureRow <= windowBegin + 8)
        return std::nullopt;
    const Rise grad = findOnset(scalars.gradNorm, windowBegin, failureRow, context.config);
    const Rise loss = findOnset(scalars.loss, windowBegin, failureRow, context.config);
    if (grad.onsetRow >= failureRow && loss.onsetRow >= failureRow)
        return std::nullopt;
    return scalars.steps[std::min(loss.onsetRow, failureRow)] - scalars.steps[std::min(grad.onsetRow, failureRow)];
}

// Under gradient clipping (or with a flat logged norm) a run can diverge with the gradient norm
// barely moving: the loss and the parameter norm show the climb. A climb of at least
// kClimbDecades (x3.2) from the lowest smoothed level of the window to the level just before the
// failure, steady (already a third of the way up halfway through) and longer than kClimbRows.
constexpr double kClimbDecades = 0.5;
constexpr size_t kClimbRows = 50;

struct Climb
{
    size_t fromRow = 0;
    double rise = 0; // decades
};

std::optional<Climb> steadyClimb(const std::vector<double>& values, size_t windowBegin, size_t failureRow)
{
    if (failureRow < windowBegin + kClimbRows || values.size() < failureRow)
        return std::nullopt;
    // Smoothed log levels: the median of 9 finite rows around each row.
    auto levelAt = [&](size_t row) {
        std::vector<double> around;
        for (size_t k = row > 4 ? row - 4 : 0; k <= row + 4 && k < failureRow; ++k)
            if (std::isfinite(values[k]) && values[k] > 0)
                around.push_back(std::log10(values[k]));
        return around.size() >= 3 ? medianOf(around) : kNaN;
    };
    size_t lowRow = windowBegin;
    double low = kInf;
    for (size_t r = windowBegin; r + 10 < failureRow; r += 5)
        if (const double level = levelAt(r); std::isfinite(level) && level < low) {
            low = level;
            lowRow = r;
        }
    // The climb starts where the series last sat at its low (a flat stretch before it is not climb).
    for (size_t r = lowRow; r + 10 < failureRow; r += 5)
        if (const double level = levelAt(r); std::isfinite(level) && level <= low + 0.05)
            lowRow = r;
    const double end = levelAt(failureRow - 5);
    if (!std::isfinite(low) || !std::isfinite(end) || end - low < kClimbDecades || failureRow - lowRow < kClimbRows)
        return std::nullopt;
    const double halfway = levelAt(lowRow + (failureRow - lowRow) / 2);
    if (!std::isfinite(halfway) || halfway - low < (end - low) / 3)
        return std::nullopt;
    return Climb{lowRow, end - low};
}

Status reportBlowup(ScanContext& context, const Failure& failure)
{
    const ScanConfig& config = context.config;
    const RunScalars& scalars = context.scalars;
    const std::vector<int64_t>& steps = scalars.steps;
    const LogSeries& s = scalars.primary();
    const size_t failureRow = failure.row;
    const int64_t failureStep = steps[failureRow];
    size_t windowBegin = rowAtOrAfter(steps, failureStep - config.lookbackSteps);
    // Do not look back past an earlier incident's burst: it is not the baseline.
    if (!context.burstRows.empty()) {
        const size_t afterBurst = context.burstRows.back().second + 1;
        if (afterBurst > windowBegin && afterBurst < failureRow)
            windowBegin = afterBurst;
    }
    const size_t lastRow = std::min(s.size() - 1, failure.lastRow     ? *failure.lastRow
                                                  : failure.nonfinite ? failureRow
                                                                      : s.size() - 1);
    const Rise rise = findOnset(s, windowBegin, failureRow, config);
    const std::optional<Jump> jump = suddenJump(context, windowBegin, failureRow, lastRow, rise);
    bool sudden = jump.has_value();
    size_t onsetRow = sudden ? jump->row : std::min(rise.onsetRow, failureRow);
    double baseline = sudden ? jump->baseline : rise.baseline;

    // Where the first NaN was born: weights already non-finite at the failing step were written
    // by the optimizer update before it; finite weights and a NaN loss mean the forward pass.
    std::optional<NonfiniteOrigin> origin;
    std::vector<std::string> nanParameters;
    if (failure.nonfinite) {
        auto bad = nonfiniteParametersAt(context.inputs, failureStep);
        if (!bad)
            return Error{bad.error()};
        if (*bad) {
            nanParameters = **bad;
            origin = nanParameters.empty() ? NonfiniteOrigin::Forward : NonfiniteOrigin::Parameters;
        }
    }
    const Incident* blamedInput = context.badInputNear(steps[onsetRow], 1, 0);
    // Born in the weights after a stable stretch: one update did it, at the failing step; the
    // noise before it is not an onset.
    // A batch with extreme values (a missing feature read as zeros) may be what met the 0/0; only
    // a batch holding NaN/Inf itself puts the origin in the data.
    const bool nanInput = blamedInput && blamedInput->severity == Severity::Critical;
    // Every parameter non-finite at the first bad row: which one went first cannot be read from
    // this row. Logged rows apart, the NaN may even have come from a forward pass in between and
    // spread through the updates: then where it was born is not known either.
    const TableInfo* layerTable = context.inputs.table(rf::kLayers);
    const bool everyParameter = origin == NonfiniteOrigin::Parameters && layerTable &&
                                nanParameters.size() >= layerTable->names.size();
    const bool spreadBetweenRows =
        everyParameter && failureRow > 0 && steps[failureRow] - steps[failureRow - 1] > 1;
    // In the first rows there is no stretch to call stable, but weights finite at the row before and
    // non-finite at this one were written by the update in between all the same.
    const bool stableBefore = stableUntil(s, windowBegin, failureRow);
    bool bornInWeights =
        origin == NonfiniteOrigin::Parameters && !nanInput && (stableBefore || (failureRow > 0 && failureRow <= 2));
    std::optional<Precursor> precursor;
    if ((!bornInWeights || spreadBetweenRows) && !blamedInput) {
        // A module's output or a parameter's norm growing toward the failure long before the
        // gradient norm shows it (attention logits growing until float16 overflows).
        auto found = findPrecursor(context.inputs, config, steps[windowBegin], failureStep, kPrecursorDecades);
        if (!found)
            return Error{found.error()};
        const int64_t margin = std::max<int64_t>(2 * config.jumpSteps, 5);
        bool use = *found && (*found)->onsetStep < steps[onsetRow] - margin;
        if (*found && !use) {
            // A module output (or a parameter) that grew by orders of magnitude steadily up to the
            // failure is how it failed, even when the primary series drifted earlier: use it when the
            // primary showed no blow-up of its own (within a jump of its baseline where the growth
            // began and right up to the failure: attention logits growing into the float16 limit).
            const size_t growthRow = rowAtOrAfter(steps, (*found)->onsetStep);
            std::vector<double> around, last;
            for (size_t r = growthRow > 2 ? growthRow - 2 : 0; r <= growthRow + 2 && r < failureRow; ++r)
                if (s.finite[r])
                    around.push_back(s.log[r]);
            for (size_t r = failureRow; r-- > growthRow && last.size() < 5;)
                if (s.finite[r])
                    last.push_back(s.log[r]);
            use = growthRow < failureRow && std::isfinite(rise.baseline) && !around.empty() && !last.empty() &&
                  medianOf(around) - rise.baseline < config.jumpDecades &&
                  medianOf(last) - rise.baseline < config.jumpDecades;
        }
        if (use) {
            precursor = *found;
            sudden = false;
            onsetRow = rowAtOrAfter(steps, precursor->onsetStep);
            baseline = rise.baseline;
            bornInWeights = false;
            if (spreadBetweenRows)
                origin.reset(); // the weights were non-finite by then, but the growth came first
        }
    }
    if (bornInWeights) {
        sudden = true;
        onsetRow = failureRow;
        baseline = levelBefore(context, failureRow);
    }
    // A "sudden" failure of the gradient norm that the loss and the parameter norm climbed to for
    // hundreds of steps is gradual: the logged norm was clipped, or flat.
    std::optional<Climb> lossClimb, paramClimb;
    std::optional<double> primaryRise;
    if (sudden && !bornInWeights && !precursor && !blamedInput && !scalars.gradNorm.empty()) {
        lossClimb = steadyClimb(scalars.loss.raw, windowBegin, failureRow);
        if (lossClimb && context.inputs.hasDataset(rf::kScalars, "param_norm"))
            if (auto norms = context.inputs.readSeries(rf::kScalars, "param_norm"))
                paramClimb = steadyClimb(*norms, windowBegin, failureRow);
        if (lossClimb) {
            sudden = false;
            onsetRow = lossClimb->fromRow;
            baseline = rise.baseline;
            std::vector<double> first, last;
            for (size_t r = onsetRow; r < failureRow && first.size() < 9; ++r)
                if (s.finite[r])
                    first.push_back(s.log[r]);
            for (size_t r = failureRow; r-- > onsetRow && last.size() < 9;)
                if (s.finite[r])
                    last.push_back(s.log[r]);
            if (!first.empty() && !last.empty())
                primaryRise = std::pow(10.0, medianOf(last) - medianOf(first));
        }
    }
    const int64_t onsetStep = precursor ? precursor->onsetStep : steps[onsetRow];

    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.severity = failure.severity;
    incident.onsetStep = onsetStep;
    auto& evidence = incident.evidence;
    evidence.series = scalars.primaryName;
    evidence.windowBeginStep = onsetStep;
    evidence.note = failure.note;
    if (std::isfinite(baseline))
        evidence.baseline = std::pow(10.0, baseline);
    // Not a sustained one-step jump from the baseline: a gradual blow-up (steady exponential
    // growth, or an escalation of spikes that come and go on the way up).
    incident.pattern = sudden ? BlowupPattern::Sudden : BlowupPattern::Gradual;

    double peak = -kInf;
    double jumpPeak = -kInf;
    std::vector<double> x, y;
    for (size_t r = onsetRow; r <= lastRow && r < s.size(); ++r) {
        if (!s.finite[r])
            continue;
        peak = std::max(peak, s.log[r]);
        if (steps[r] - onsetStep <= config.jumpSteps)
            jumpPeak = std::max(jumpPeak, s.log[r]);
        x.push_back(double(steps[r]));
        y.push_back(s.log[r]);
    }
    if (std::isfinite(peak))
        evidence.peak = std::pow(10.0, peak);
    if (std::isfinite(baseline)) {
        const double top = sudden ? jumpPeak : peak;
        if (std::isfinite(top))
            evidence.jumpRatio = std::pow(10.0, top - baseline);
    }
    // The growth before the failure; a lone point (sudden jump straight to NaN) has no slope.
    if (x.size() >= 2)
        evidence.growthDecadesPerStep = theilSenSlope(x, y);
    else if (x.size() == 1 && std::isfinite(baseline) && steps[lastRow] > onsetStep)
        evidence.growthDecadesPerStep = (y[0] - baseline) / double(steps[lastRow] - onsetStep);

    if (precursor) {
        evidence.series = precursor->source + "/" + precursor->name;
        evidence.baseline = precursor->baseline;
        evidence.peak = precursor->peak;
        evidence.jumpRatio = std::pow(10.0, precursor->riseDecades);
        evidence.growthDecadesPerStep = precursor->decadesPerStep;
        if (precursor->source == "activations") {
            evidence.headroomOf = precursor->name;
            evidence.float16HeadroomDecades = headroomDecades(precursor->peak, kFloat16Max);
            evidence.bfloat16HeadroomDecades = headroomDecades(precursor->peak, kBFloat16Max);
        }
    }
    evidence.nonfiniteOrigin = origin;
    evidence.gradLeadSteps = gradientLead(context, windowBegin, failureRow);

    // Non-finite step: first NaN/Inf in the loss, the grad norm, or any layer in the window.
    std::optional<int64_t> nonfiniteStep;
    for (size_t r = onsetRow; r < steps.size(); ++r)
        if (scalars.rowNonfinite(r)) {
            nonfiniteStep = steps[r];
            break;
        }
    const int64_t windowEnd = failure.nonfinite ? failureStep + config.jumpSteps : context.report.lastStep;
    // Layers are judged over a shorter look-back than the total: their own baseline just
    // before the onset is what matters, and a thousand layers times the full window is slow.
    const int64_t layerWindowBegin =
        std::max(steps[windowBegin], onsetStep - std::max<int64_t>(4 * config.baselineRows, 100));
    auto blame = blameLayers(context.inputs, context.order, config, layerWindowBegin, onsetStep, windowEnd);
    if (!blame)
        return Error{blame.error()};
    for (const auto& [onset, position] : *blame) {
        if (onset.nonfiniteStep && (!nonfiniteStep || *onset.nonfiniteStep < *nonfiniteStep) &&
            *onset.nonfiniteStep >= onsetStep)
            nonfiniteStep = onset.nonfiniteStep;
    }
    if (everyParameter && !precursor) {
        // Layers bad only from the failing row on were all bad at once: naming the first in forward
        // order would name a layer that may have been fine. Only layers that rose earlier stay.
        blame->erase(std::remove_if(blame->begin(), blame->end(),
                                    [&](const RankedOnset& o) {
                                        return o.first.onsetStep >= failureStep ||
                                               (o.first.nonfinite && o.first.nonfiniteStep &&
                                                *o.first.nonfiniteStep >= failureStep);
                                    }),
                     blame->end());
    }
    if (origin == NonfiniteOrigin::Parameters && !everyParameter && !nanInput && !precursor && sudden) {
        // A sudden NaN with some parameters non-finite, the others finite: the update wrote NaN into
        // these first (a gradual blow-up keeps the layers that rose first).
        std::vector<RankedOnset> weights;
        for (const auto& name : nanParameters)
            weights.push_back({LayerOnset{name, "layers/param_norm", failureStep, kInf, true, failureStep},
                               context.order.parameter(name)});
        fillLayers(incident, weights, config.maxLayersListed);
        nonfiniteStep = failureStep;
    }
    if (precursor) {
        // The column that grew first is where the blow-up began.
        const bool activation = precursor->source == "activations";
        const int position = activation ? context.order.module(precursor->name) : context.order.parameter(precursor->name);
        fillLayers(incident,
                   {{LayerOnset{precursor->name, precursor->source,
                                precursor->onsetStep, precursor->riseDecades, false, std::nullopt},
                     position}},
                   config.maxLayersListed);
    }
    fillLayers(incident, *blame, config.maxLayersListed);
    incident.nonfiniteStep = nonfiniteStep;
    evidence.windowEndStep = nonfiniteStep ? *nonfiniteStep : steps[lastRow];
    context.blowupOnsetRow = onsetRow;
    context.blowupOnsetStep = onsetStep;

    BlowupFacts facts;
    facts.series = scalars.gradNorm.empty() ? "loss" : "gradient norm";
    facts.sudden = sudden;
    facts.onsetStep = onsetStep;
    facts.nonfiniteStep = nonfiniteStep;
    facts.windowEndStep = evidence.windowEndStep;
    facts.jumpRatio = evidence.jumpRatio;
    facts.growthDecadesPerStep = evidence.growthDecadesPerStep;
    facts.baseline = evidence.baseline;
    facts.firstLayer = incident.layers.empty() ? std::string() : incident.layers.front();
    facts.bornInWeights = bornInWeights;
    if (lossClimb) {
        facts.lossClimb = std::pow(10.0, lossClimb->rise);
        if (paramClimb)
            facts.paramNormClimb = std::pow(10.0, paramClimb->rise);
        facts.primaryRise = primaryRise;
    }
    facts.stableBefore = stableBefore;
    facts.firstLayerUndetermined = everyParameter && !precursor && incident.layers.empty();
    facts.nanParameters = nanParameters;
    facts.previousLoggedStep = failureRow > 0 ? std::optional<int64_t>(steps[failureRow - 1]) : std::nullopt;
    if (precursor) {
        facts.precursor = precursor->name;
        facts.precursorSource = precursor->source;
        facts.precursorRiseDecades = precursor->riseDecades;
        facts.float16Overflow = precursor->source == "activations" && nearFloat16Limit(precursor->peak);
    }
    if (const Incident* input = context.badInputNear(onsetStep, 1, 0); input && !bornInWeights)
        facts.input = BlamedInput{input->onsetStep, input->severity == Severity::Critical, input->evidence.note,
                                  context.batchNote(input->onsetStep)};
    facts.nanInFirstSteps = onsetRow <= 2 && nonfiniteStep && *nonfiniteStep <= context.report.firstStep + 2;
    facts.firstLoggedStep = context.report.firstStep;
    // Non-finite from the first logged value: there is no growth to see, so no pattern to name.
    if (facts.nanInFirstSteps)
        incident.pattern.reset();
    facts.learningRateRise =
        scalars.learningRateRise(std::max(windowBegin, onsetRow > 50 ? onsetRow - 50 : size_t(0)), lastRow);
    facts.fp16 = context.inputs.fp16();
    facts.batchNote = context.batchNote(onsetStep);
    applyDiagnosis(incident, diagnoseBlowup(facts));
    // The weights went first: the normalisation statistics a forward pass through them poisoned are
    // its consequence, and point to it (the root is the incident a user fixes).
    if (bornInWeights)
        for (Incident& other : context.report.incidents)
            if (other.kind == IncidentKind::BnCorruption && other.onsetStep >= failureStep &&
                other.onsetStep <= failureStep + 1) {
                other.cause += " " + consequenceOfNanWeightsNote(failureStep);
                if (other.severity == Severity::Critical)
                    other.severity = Severity::Warning;
            }
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

// A burst the training recovered from: which layer produced it and why.
Status reportNonfiniteBurst(ScanContext& context, const Burst& burst)
{
    const RunScalars& scalars = context.scalars;
    const ScanInputs& inputs = context.inputs;
    const ForwardOrder& order = context.order;
    context.burstRows.push_back({burst.firstRow, burst.lastRow});
    const int64_t first = scalars.steps[burst.firstRow];
    const int64_t last = scalars.steps[burst.lastRow];
    Incident incident;
    incident.kind = IncidentKind::NonfiniteLoss;
    incident.severity = Severity::Warning;
    incident.onsetStep = first;
    incident.evidence.series = scalars.loss.finite[burst.firstRow] ? scalars.primaryName : rf::scalarSeries("loss");
    incident.evidence.windowBeginStep = first;
    incident.evidence.windowEndStep = last;
    incident.evidence.count = burst.count;
    NonfiniteBurstFacts facts;
    facts.firstStep = first;
    facts.lastStep = last;
    facts.count = burst.count;
    facts.lossFinite = true;
    for (size_t r = burst.firstRow; r <= burst.lastRow; ++r) {
        facts.skippedByTraining = facts.skippedByTraining || scalars.skippedAt(r);
        facts.lossFinite = facts.lossFinite && scalars.loss.finite[r];
    }
    // How far the (finite) loss jumped over its recent median: one extreme batch, not an overflow.
    if (facts.lossFinite) {
        std::vector<double> before;
        for (size_t r = burst.firstRow; r-- > 0 && before.size() < 20;)
            if (scalars.loss.finite[r] && scalars.loss.raw[r] > 0)
                before.push_back(scalars.loss.raw[r]);
        const double median = before.size() >= 3 ? medianOf(before) : kNaN;
        for (size_t r = burst.firstRow; r <= burst.lastRow && median > 0; ++r)
            facts.lossJump = std::max(facts.lossJump, scalars.loss.raw[r] / median);
    }
    // The gradient norm alone non-finite, the loss finite and ordinary, a step or three: a
    // mixed-precision step the loss scaler skipped. Worth seeing on the timeline, not a warning.
    if (facts.lossFinite && burst.count <= 3 && facts.lossJump < kExtremeBatchLossJump)
        incident.severity = Severity::Info;
    // The kind says what was non-finite: a gradient norm beside a finite loss is not a NaN loss.
    if (facts.lossFinite)
        incident.kind = IncidentKind::NonfiniteGradient;

    // Which layer produced it: the first module (in forward order) whose output went
    // non-finite at the burst's first logged activation row, then the gradients.
    std::vector<RankedOnset> onsets;
    if (const TableInfo* activations = inputs.table(rf::kActivations)) {
        auto columns = inputs.readWindow(rf::kActivations, rf::column::kMax, rf::column::kNan, rf::column::kInf, first, last);
        if (!columns)
            return Error{columns.error()};
        int64_t earliest = std::numeric_limits<int64_t>::max();
        for (size_t c = 0; c < columns->size(); ++c) {
            const LayerColumn& column = (*columns)[c];
            for (size_t r = 0; r < column.series.size(); ++r)
                if (!column.series.finite[r]) {
                    const int64_t step = column.series.steps[r];
                    onsets.push_back(
                        {LayerOnset{column.name, "activations", step, kInf, true, step}, order.module(column.name)});
                    if (step < earliest ||
                        (step == earliest && order.module(column.name) < order.module(facts.origin))) {
                        earliest = step;
                        facts.origin = column.name;
                        facts.originKind = c < activations->kinds.size() ? activations->kinds[c] : "";
                        // Its input: the previous module's output, or the batch for the first one.
                        facts.originInputFinite =
                            c == 0 ? !context.badInputNear(earliest, 0, 0)
                                   : (r < (*columns)[c - 1].series.size() && (*columns)[c - 1].series.finite[r]);
                    }
                    break;
                }
        }
    }
    if (inputs.hasDataset(rf::kLayers, rf::column::kGradNorm)) {
        auto columns = inputs.readWindow(rf::kLayers, rf::column::kGradNorm, rf::column::kGradNonfinite, nullptr, first, last);
        if (!columns)
            return Error{columns.error()};
        for (const auto& column : *columns)
            for (size_t r = 0; r < column.series.size(); ++r)
                if (!column.series.finite[r]) {
                    facts.gradientsNonfinite = true;
                    onsets.push_back({LayerOnset{column.name, column.source, column.series.steps[r], kInf, true,
                                                 column.series.steps[r]},
                                      order.parameter(column.name)});
                    break;
                }
    }
    orderLayerOnsets(onsets, context.config.tieDecades);
    fillLayers(incident, onsets, context.config.maxLayersListed);
    if (facts.origin.empty() && inputs.table(rf::kActivations)) {
        const auto& logged = inputs.steps(rf::kActivations);
        facts.activationsFiniteAtFirstStep = std::binary_search(logged.begin(), logged.end(), first);
    }
    facts.logEndsAtBurst = burst.lastRow + 1 >= scalars.steps.size();

    const Incident* input = context.badInputNear(first, 0, last - first);
    facts.nanInput = input && input->severity == Severity::Critical;
    facts.inFirstBatch = burst.firstRow <= 1;
    facts.fp16 = inputs.fp16();
    facts.batchNote = context.batchNote(first);
    applyDiagnosis(incident, diagnoseNonfiniteBurst(facts));
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace

Status detectNonfiniteAndBlowup(ScanContext& context)
{
    const size_t rows = context.scalars.steps.size();
    size_t failureRow = rows;
    for (const Burst& burst : nonfiniteBursts(context)) {
        if (recoveredAfter(context, burst) && !explodedBefore(context, burst)) {
            if (Status s = reportNonfiniteBurst(context, burst); !s)
                return s;
            continue;
        }
        failureRow = burst.firstRow;
        break;
    }
    if (failureRow < rows) {
        Failure failure;
        failure.row = failureRow;
        failure.nonfinite = true;
        return reportBlowup(context, failure);
    }
    if (auto destroyed = destroyedByExplosion(context))
        return reportBlowup(context, *destroyed);
    if (auto rise = finiteRise(context))
        return reportBlowup(context, *rise);
    return Status::success();
}

} // namespace nanscope::scan
