// How a blow-up began (BlowupOnset.h).
#include "core/scan/BlowupOnset.h"

#include "core/scan/Signatures.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace {
// The primary series within this of its level before (x2) right up to a failure: it was stable.
constexpr double kStableDecades = 0.3;
} // namespace

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

std::optional<LossDivergence> lossDivergence(const LogSeries& loss, size_t windowBegin, size_t failureRow,
                                             double minDecades, double nearBest)
{
    if (failureRow > loss.size() || failureRow < windowBegin + 20)
        return std::nullopt;
    // The median of up to nine finite rows from `from` to `to` (exclusive); NaN with fewer than five.
    const auto levelOf = [&](size_t from, size_t to) {
        std::vector<double> values;
        for (size_t r = from; r < to; ++r)
            if (loss.finite[r] && loss.raw[r] > 0)
                values.push_back(loss.log[r]);
        return values.size() >= 5 ? medianOf(values) : kNaN;
    };
    const auto around = [&](size_t row) {
        return levelOf(row > windowBegin + 4 ? row - 4 : windowBegin, std::min(row + 5, failureRow));
    };
    size_t bestRow = failureRow;
    double best = kInf;
    for (size_t r = windowBegin + 4; r + 10 < failureRow; ++r)
        if (const double level = around(r); level < best) {
            best = level;
            bestRow = r;
        }
    const double last = levelOf(failureRow > windowBegin + 9 ? failureRow - 9 : windowBegin, failureRow);
    if (bestRow == failureRow || !std::isfinite(last) || last - best < minDecades)
        return std::nullopt;
    size_t onset = bestRow;
    for (size_t r = bestRow; r + 5 < failureRow; ++r)
        if (around(r) <= best + nearBest)
            onset = r;
    return LossDivergence{bestRow, Climb{onset, last - best}};
}

// A learning-rate climb: at least kLrClimbRows logged rows up to the jump, most of them
// (kLrRisingShare) higher than the row before and none lower, rising kLrClimbDecades (x3.2) or more.
constexpr size_t kLrClimbRows = 5;
constexpr double kLrRisingShare = 0.8;
constexpr double kLrClimbDecades = 0.5;

std::optional<Climb> learningRateClimb(const RunScalars& scalars, size_t windowBegin, size_t jumpRow)
{
    const std::vector<double>& lr = scalars.lr;
    if (jumpRow >= lr.size() || !std::isfinite(lr[jumpRow]) || lr[jumpRow] <= 0)
        return std::nullopt;
    size_t from = jumpRow;
    while (from > windowBegin && std::isfinite(lr[from - 1]) && lr[from - 1] > 0 && lr[from - 1] <= lr[from])
        --from;
    // A flat stretch before it is where the learning rate sat, not climb.
    while (from < jumpRow && lr[from + 1] == lr[from])
        ++from;
    size_t rising = 0;
    for (size_t r = from + 1; r <= jumpRow; ++r)
        rising += lr[r] > lr[r - 1];
    const size_t rows = jumpRow - from;
    if (rows < kLrClimbRows || double(rising) < kLrRisingShare * double(rows))
        return std::nullopt;
    const double decades = std::log10(lr[jumpRow] / lr[from]);
    if (decades < kLrClimbDecades)
        return std::nullopt;
    return Climb{from, decades};
}

std::optional<Climb> learningRateClimbFromLevel(const RunScalars& scalars, size_t windowBegin, size_t endRow)
{
    const std::vector<double>& lr = scalars.lr;
    const auto positive = [&](size_t r) { return std::isfinite(lr[r]) && lr[r] > 0; };
    if (endRow >= lr.size() || !positive(endRow))
        return std::nullopt;
    size_t from = endRow;
    while (from > windowBegin && positive(from - 1) && lr[from - 1] < lr[from])
        --from;
    // The row before held the level or more (a constant rate, or a decay the climb turned around).
    if (from == windowBegin || from < 1 || endRow - from < kLrClimbRows || !positive(from - 1))
        return std::nullopt;
    const double decades = std::log10(lr[endRow] / lr[from]);
    if (decades < kLrClimbDecades)
        return std::nullopt;
    return Climb{from, decades};
}

} // namespace nanscope::scan
