// A training loss that climbs away from its best level and stays up, with no NaN and no jump of
// blow-up size: the run diverged slowly (a learning rate that grew too high for this point of
// training, drifting data). The blow-up rule needs NaN or orders of magnitude; this one sees the
// x3-x100 climb that precedes them, or that a run ends in without ever reaching them.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/scan/Onset.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace {

// A loss that is zero or negative on more than this share of its rows has no scale to climb on
// (a log-likelihood, a GAN's losses): the rule leaves it alone.
constexpr double kMostNonPositiveShare = 0.05;
// Share of the last rows that must lie above the best level x sqrt(divergence_ratio): the climb
// is held, not one bad stretch at the end.
constexpr double kHeldShare = 0.8;
// The smoothed loss must take this many smoothing windows to climb from 10% to 90% of the rise;
// faster is a jump to a new level, which the spike and blow-up rules judge.
constexpr double kGradualWindows = 1.5;

// The loss's positive finite rows as a series of their own (a running median must not see the
// others), with the scalar-table row each came from.
struct PositiveLoss
{
    LogSeries series;
    std::vector<size_t> scalarRow;
};

PositiveLoss positiveFiniteRows(const LogSeries& loss)
{
    PositiveLoss positive;
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (size_t r = 0; r < loss.size(); ++r)
        if (loss.finite[r] && loss.raw[r] > 0) {
            positive.scalarRow.push_back(r);
            steps.push_back(loss.steps[r]);
            values.push_back(loss.raw[r]);
        }
    positive.series = makeLogSeries(steps, values);
    return positive;
}

} // namespace

Status detectDivergence(ScanContext& context)
{
    const ScanConfig& config = context.config;
    if (context.blowupOnsetRow || !(config.divergenceRatio > 1))
        return Status::success(); // a blow-up explains the climb, or the rule is switched off
    const LogSeries& loss = context.scalars.loss;
    const PositiveLoss positive = positiveFiniteRows(loss);
    const LogSeries& s = positive.series;
    const size_t n = s.size();
    if (n < size_t(std::max<int64_t>(config.divergenceMinRows, 10)))
        return Status::success();
    const auto finiteRows = size_t(std::count(loss.finite.begin(), loss.finite.end(), uint8_t(1)));
    if (double(finiteRows - n) > kMostNonPositiveShare * double(finiteRows))
        return Status::success();

    // The level the loss had at its best, after the first tenth of the log and the warm-up (a loss
    // still falling from its initial value is no baseline), on a running median a few percent of
    // the log wide so that batch noise cannot make a best or a climb.
    const size_t width = std::max<size_t>(5, n / 20);
    const std::vector<double> smooth = smoothed(s, 0, n, int64_t(width / 2));
    size_t start = n / 10;
    while (start < n && s.steps[start] < s.steps.front() + config.warmupSteps)
        ++start;
    if (start + width >= n)
        return Status::success();
    const size_t bestRow =
        size_t(std::min_element(smooth.begin() + long(start), smooth.end() - long(width)) - smooth.begin());
    const double best = smooth[bestRow];
    const std::vector<double> last(s.log.end() - long(width), s.log.end());
    const double endLevel = medianOf(last);
    const double rise = endLevel - best;
    const double needed = std::log10(config.divergenceRatio);
    if (!(rise >= needed))
        return Status::success();
    const double heldAbove = best + 0.5 * needed;
    const auto held = std::count_if(last.begin(), last.end(), [&](double v) { return v > heldAbove; });
    if (double(held) < kHeldShare * double(last.size()))
        return Status::success();

    // Where the climb began: the last row near the best level. And whether it was a climb: the
    // smoothed loss went from 10% to 90% of the rise over several windows, not in one jump.
    size_t onset = bestRow;
    for (size_t i = bestRow; i < n; ++i)
        if (smooth[i] <= best + config.minOnsetDecades)
            onset = i;
    size_t tenth = n, ninetieth = n;
    for (size_t i = onset; i < n; ++i) {
        if (tenth == n && smooth[i] >= best + 0.1 * rise)
            tenth = i;
        if (ninetieth == n && smooth[i] >= best + 0.9 * rise)
            ninetieth = i;
    }
    if (tenth == n || ninetieth == n || double(ninetieth - tenth) < kGradualWindows * double(width))
        return Status::success();

    const int64_t onsetStep = s.steps[onset];
    const int64_t endStep = s.steps.back();
    const std::vector<double> x(s.steps.begin() + long(onset), s.steps.end());
    const std::vector<double> y(s.log.begin() + long(onset), s.log.end());
    const double peak = *std::max_element(s.raw.begin() + long(onset), s.raw.end());

    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.pattern = BlowupPattern::Gradual;
    // Orders of magnitude for good is a blow-up whatever the route; below that, a warning.
    incident.severity = rise >= config.jumpDecades ? Severity::Critical : Severity::Warning;
    incident.onsetStep = onsetStep;
    auto& e = incident.evidence;
    e.series = runformat::scalarSeries(runformat::scalar::kLoss);
    e.windowBeginStep = onsetStep;
    e.windowEndStep = endStep;
    e.baseline = std::pow(10.0, best);
    e.peak = peak;
    e.jumpRatio = std::pow(10.0, rise);
    if (const double slope = theilSenSlope(x, y); std::isfinite(slope))
        e.growthDecadesPerStep = slope;

    DivergenceFacts facts;
    facts.onsetStep = onsetStep;
    facts.bestStep = s.steps[bestRow];
    facts.bestLevel = std::pow(10.0, best);
    facts.endLevel = std::pow(10.0, endLevel);
    facts.endStep = endStep;
    facts.learningRateRise = context.scalars.learningRateRise(positive.scalarRow[onset], positive.scalarRow.back());
    facts.batchNote = context.batchNote(onsetStep);
    applyDiagnosis(incident, diagnoseDivergence(facts));
    // The layers that rose with it, against their own level before the climb; a failed read only
    // costs the incident its layer names.
    if (auto layers = blameLayers(context.inputs, context.order, config, facts.bestStep, onsetStep, endStep))
        fillLayers(incident, *layers, config.maxLayersListed);
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace nanscope::scan
