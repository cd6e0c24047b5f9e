// A training loss that climbs away from its best level and stays up, with no NaN and no jump of
// blow-up size: the run diverged slowly (a learning rate that grew too high for this point of
// training, drifting data). The blow-up rule needs NaN or orders of magnitude; this one sees the
// x3-x100 climb that precedes them, or that a run ends in without ever reaching them.
#include "core/scan/ScanRules.h"

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

struct LossRows
{
    std::vector<size_t> row; // rows of the scalar table
    std::vector<double> log; // log10 of the loss there
};

LossRows positiveFiniteRows(const LogSeries& loss)
{
    LossRows rows;
    for (size_t r = 0; r < loss.size(); ++r)
        if (loss.finite[r] && loss.raw[r] > 0) {
            rows.row.push_back(r);
            rows.log.push_back(loss.log[r]);
        }
    return rows;
}

// Centred running median of `values` over `width` rows.
std::vector<double> runningMedian(const std::vector<double>& values, size_t width)
{
    std::vector<double> smoothed(values.size());
    std::vector<double> scratch;
    const size_t half = width / 2;
    for (size_t i = 0; i < values.size(); ++i) {
        const size_t begin = i > half ? i - half : 0;
        const size_t end = std::min(values.size(), i + half + 1);
        scratch.assign(values.begin() + long(begin), values.begin() + long(end));
        smoothed[i] = medianInPlace(scratch);
    }
    return smoothed;
}

} // namespace

Status detectDivergence(ScanContext& context)
{
    const ScanConfig& config = context.config;
    if (context.blowupOnsetRow || !(config.divergenceRatio > 1))
        return Status::success(); // a blow-up explains the climb, or the rule is switched off
    const LogSeries& loss = context.scalars.loss;
    const LossRows rows = positiveFiniteRows(loss);
    const size_t n = rows.row.size();
    if (n < size_t(std::max<int64_t>(config.divergenceMinRows, 10)))
        return Status::success();
    size_t finiteRows = 0;
    for (size_t r = 0; r < loss.size(); ++r)
        finiteRows += loss.finite[r];
    if (double(finiteRows - n) > kMostNonPositiveShare * double(finiteRows))
        return Status::success();

    // The level the loss had at its best, after the first tenth of the log and the warm-up (a loss
    // still falling from its initial value is no baseline), on a running median a few percent of
    // the log wide so that batch noise cannot make a best or a climb.
    const size_t width = std::max<size_t>(5, n / 20);
    const std::vector<double> smoothed = runningMedian(rows.log, width);
    size_t start = n / 10;
    const int64_t warmupEnd = loss.steps[rows.row.front()] + config.warmupSteps;
    while (start < n && loss.steps[rows.row[start]] < warmupEnd)
        ++start;
    if (start + width >= n)
        return Status::success();
    const size_t bestRow = size_t(std::min_element(smoothed.begin() + long(start), smoothed.end() - long(width)) -
                                  smoothed.begin());
    const double best = smoothed[bestRow];
    std::vector<double> last(rows.log.end() - long(width), rows.log.end());
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
        if (smoothed[i] <= best + config.minOnsetDecades)
            onset = i;
    size_t tenth = n, ninetieth = n;
    for (size_t i = onset; i < n; ++i) {
        if (tenth == n && smoothed[i] >= best + 0.1 * rise)
            tenth = i;
        if (ninetieth == n && smoothed[i] >= best + 0.9 * rise)
            ninetieth = i;
    }
    if (tenth == n || ninetieth == n || double(ninetieth - tenth) < kGradualWindows * double(width))
        return Status::success();

    const std::vector<int64_t>& steps = context.scalars.steps;
    const int64_t onsetStep = steps[rows.row[onset]];
    const int64_t endStep = steps[rows.row.back()];
    std::vector<double> x, y;
    double peak = 0;
    for (size_t i = onset; i < n; ++i) {
        x.push_back(double(steps[rows.row[i]]));
        y.push_back(rows.log[i]);
        peak = std::max(peak, loss.raw[rows.row[i]]);
    }

    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.pattern = BlowupPattern::Gradual;
    // Orders of magnitude for good is a blow-up whatever the route; below that, a warning.
    incident.severity = rise >= config.jumpDecades ? Severity::Critical : Severity::Warning;
    incident.onsetStep = onsetStep;
    auto& e = incident.evidence;
    e.series = "scalars/loss";
    e.windowBeginStep = onsetStep;
    e.windowEndStep = endStep;
    e.baseline = std::pow(10.0, best);
    e.peak = peak;
    e.jumpRatio = std::pow(10.0, rise);
    if (const double slope = theilSenSlope(x, y); std::isfinite(slope))
        e.growthDecadesPerStep = slope;

    DivergenceFacts facts;
    facts.onsetStep = onsetStep;
    facts.bestStep = steps[rows.row[bestRow]];
    facts.bestLevel = std::pow(10.0, best);
    facts.endLevel = std::pow(10.0, endLevel);
    facts.endStep = endStep;
    const std::vector<double>& lr = context.scalars.lr;
    const size_t onsetScalarRow = rows.row[onset], endScalarRow = rows.row.back();
    if (endScalarRow < lr.size() && std::isfinite(lr[onsetScalarRow]) && std::isfinite(lr[endScalarRow]) &&
        lr[onsetScalarRow] > 0 && lr[endScalarRow] > 1.5 * lr[onsetScalarRow])
        facts.learningRateRise = lr[endScalarRow] / lr[onsetScalarRow];
    facts.batchNote = context.batchNote(onsetStep);
    applyDiagnosis(incident, diagnoseDivergence(facts));
    // The layers that rose with it, against their own level before the climb; a failed read only
    // costs the incident its layer names.
    if (auto layers = blameLayers(context.inputs, context.order, config, steps[rows.row[bestRow]], onsetStep, endStep))
        fillLayers(incident, *layers, config.maxLayersListed);
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace nanscope::scan
