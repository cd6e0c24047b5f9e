#include "core/compare/SeriesDivergence.h"

#include "core/scan/RobustStats.h"

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {

// One run's series on the scale it is compared on, with its rolling band.
struct Banded
{
    std::vector<int64_t> steps;
    std::vector<double> y;       // log10 or linear; NaN where the value is not finite
    std::vector<uint8_t> finite;
    std::vector<double> centre;  // rolling median of the finite values in a centred window; NaN if none
    std::vector<double> noise;   // robust sigma of the residuals y - centre in the window before the row
};

Banded banded(const StepSeries& series, bool logScale, int windowRows)
{
    Banded b;
    const size_t n = series.size();
    b.steps.assign(series.steps.begin(), series.steps.begin() + n);
    b.y.resize(n);
    b.finite.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const double v = series.values[i];
        b.finite[i] = std::isfinite(v);
        b.y[i] = !b.finite[i] ? scan::kNaN : logScale ? std::log10(v) : v;
    }
    const size_t half = size_t(std::max(1, windowRows / 2));
    std::vector<double> window;
    b.centre.assign(n, scan::kNaN);
    for (size_t i = 0; i < n; ++i) {
        window.clear();
        // Non-finite rows are worse than anything: a run that stays NaN moves its own median.
        for (size_t j = i >= half ? i - half : 0; j < std::min(n, i + half + 1); ++j)
            window.push_back(b.finite[j] ? b.y[j] : series.values[j] < 0 ? -scan::kInf : scan::kInf);
        b.centre[i] = scan::medianInPlace(window);
    }
    // The noise at a row is measured on the rows before it (the first rows use the first window):
    // a departure must not widen the band it is measured against.
    const size_t width = 2 * half + 1;
    b.noise.assign(n, scan::kNaN);
    for (size_t i = 0; i < n; ++i) {
        const size_t end = std::min(n, std::max(i, width));
        const size_t begin = end >= width ? end - width : 0;
        window.clear();
        for (size_t j = begin; j < end; ++j)
            if (b.finite[j] && std::isfinite(b.centre[j]))
                window.push_back(std::fabs(b.y[j] - b.centre[j]));
        b.noise[i] = window.empty() ? scan::kNaN : scan::noiseFromDeviationsInPlace(window);
    }
    return b;
}

// A run's band at a step between its rows: centre and noise interpolated linearly; NaN where
// either neighbour has none.
struct BandAt
{
    double centre = scan::kNaN;
    double noise = scan::kNaN;
    bool finiteHere = true; // the run's own value at its row at or before the step
};

BandAt bandAt(const Banded& b, int64_t step)
{
    BandAt at;
    const size_t after = scan::rowAtOrAfter(b.steps, step);
    if (after < b.steps.size() && b.steps[after] == step) {
        at.centre = b.centre[after];
        at.noise = b.noise[after];
        at.finiteHere = b.finite[after];
        return at;
    }
    if (after == 0 || after >= b.steps.size())
        return at;
    const size_t before = after - 1;
    const double t = double(step - b.steps[before]) / double(b.steps[after] - b.steps[before]);
    at.centre = std::isfinite(b.centre[before]) && std::isfinite(b.centre[after])
                    ? b.centre[before] + t * (b.centre[after] - b.centre[before])
                    : b.centre[before];
    at.noise = b.noise[before] + t * (b.noise[after] - b.noise[before]);
    at.finiteHere = b.finite[before];
    return at;
}

struct Departure
{
    size_t row = 0; // in the leaving run
    double centre = scan::kNaN;
    double halfWidth = 0;
};

// The first lasting departure of `leaving`'s points from `band`, within [first, last].
std::optional<Departure> firstDeparture(const Banded& leaving, const Banded& band, int64_t first, int64_t last,
                                        const DivergenceConfig& config, bool logScale, int64_t& compared)
{
    const size_t begin = scan::rowAtOrAfter(leaving.steps, first);
    const size_t end = scan::rowAfter(leaving.steps, last);
    const double floorFraction = std::max(0.0, config.minimumRelativeBand);
    std::optional<Departure> candidate;
    int outside = 0;
    for (size_t i = begin; i < end; ++i) {
        ++compared;
        const BandAt at = bandAt(band, leaving.steps[i]);
        bool out = false;
        Departure d{i, at.centre, 0};
        const double minimum = logScale ? std::log10(1 + floorFraction) : floorFraction * std::fabs(at.centre);
        // The noisier of the two: a run logging raw values is not "out" of a run logging
        // averages just for its scatter.
        const double bandNoise = std::isfinite(at.noise) ? at.noise : 0;
        const double ownNoise = std::isfinite(leaving.noise[i]) ? leaving.noise[i] : 0;
        d.halfWidth = std::max({config.bandSigmas * std::max(bandNoise, ownNoise), std::isfinite(minimum) ? minimum : 0.0, 1e-300});
        if (!leaving.finite[i]) {
            // Non-finite leaves a band the other run still has; both broken is "together".
            out = at.finiteHere && std::isfinite(at.centre);
        } else {
            // Medians against medians: two runs of one process have the same median whatever
            // their scatter, and the same curvature where the series bends. Both non-finite
            // medians (inf - inf) compare as together.
            const double gap = std::fabs(leaving.centre[i] - at.centre);
            out = !std::isnan(gap) && gap > d.halfWidth;
        }
        if (!out) {
            candidate.reset();
            outside = 0;
            continue;
        }
        if (!candidate)
            candidate = d;
        if (++outside >= std::max(1, config.persistPoints))
            return candidate;
    }
    // The overlap ended during a departure: it lasted as long as both runs were logged.
    return candidate;
}

// How far a run's value at `row` is from the median of its own earlier rows: the run that left is
// the one that moved. Non-finite moved the most.
double movedFromOwnPast(const Banded& run, size_t row, int windowRows)
{
    if (!run.finite[row])
        return scan::kInf;
    // The past a few windows back: a run that has been drifting away for a while (a gradual
    // blow-up) has moved more from there than the other run's last wobble.
    const size_t w = size_t(std::max(1, windowRows));
    const size_t end = row > w ? row - w : row;
    std::vector<double> past;
    for (size_t j = end > 3 * w ? end - 3 * w : 0; j < end; ++j)
        if (run.finite[j])
            past.push_back(run.y[j]);
    if (past.empty())
        return 0;
    // In the series' own units (decades on a log scale), not in sigmas: a quiet run's small
    // wobble must not outweigh the other run's blow-up.
    return std::fabs(run.y[row] - scan::medianInPlace(past));
}

} // namespace

bool SeriesDivergence::leftNonfinite() const
{
    return step && !std::isfinite(leavingValue);
}

SeriesDivergence findDivergence(const std::string& series, const StepSeries& a, const StepSeries& b,
                                const DivergenceConfig& config)
{
    SeriesDivergence result;
    result.series = series;
    if (a.empty() || b.empty())
        return result;
    result.firstCommonStep = std::max(a.steps.front(), b.steps.front());
    result.lastCommonStep = std::min(a.steps[a.size() - 1], b.steps[b.size() - 1]);
    if (result.firstCommonStep > result.lastCommonStep)
        return result;

    // Decades when both are positive wherever finite (loss, norms, rates), else the values.
    bool logScale = true;
    for (const StepSeries* s : {&a, &b})
        for (size_t i = 0; i < s->size() && logScale; ++i)
            if (std::isfinite(s->values[i]) && s->values[i] <= 0)
                logScale = false;
    result.logScale = logScale;

    const Banded bandedA = banded(a, logScale, config.windowRows);
    const Banded bandedB = banded(b, logScale, config.windowRows);
    const std::optional<Departure> bLeaves =
        firstDeparture(bandedB, bandedA, result.firstCommonStep, result.lastCommonStep, config, logScale,
                       result.comparedPoints);
    const std::optional<Departure> aLeaves =
        firstDeparture(bandedA, bandedB, result.firstCommonStep, result.lastCommonStep, config, logScale,
                       result.comparedPoints);
    const auto stepOf = [](const Banded& run, const std::optional<Departure>& d) {
        return d ? run.steps[d->row] : INT64_MAX;
    };
    if (!aLeaves && !bLeaves)
        return result;
    const int64_t step = std::min(stepOf(bandedA, aLeaves), stepOf(bandedB, bLeaves));
    // Both directions usually fire at the same step (a run that jumps leaves the other's band, and
    // the other is then outside the jumped run's band too): the run that left is the one that
    // moved away from its own recent past.
    const size_t rowA = std::min(scan::rowAtOrAfter(bandedA.steps, step), bandedA.steps.size() - 1);
    const size_t rowB = std::min(scan::rowAtOrAfter(bandedB.steps, step), bandedB.steps.size() - 1);
    const bool bFirst = movedFromOwnPast(bandedB, rowB, config.windowRows) >= movedFromOwnPast(bandedA, rowA, config.windowRows);
    const Banded& leaving = bFirst ? bandedB : bandedA;
    const Banded& band = bFirst ? bandedA : bandedB;
    const StepSeries& leavingSeries = bFirst ? b : a;
    const size_t row = bFirst ? rowB : rowA;
    const BandAt at = bandAt(band, leaving.steps[row]);
    Departure d{row, at.centre, 0};
    if (std::isfinite(at.centre)) {
        const double minimum = logScale ? std::log10(1 + std::max(0.0, config.minimumRelativeBand))
                                        : std::max(0.0, config.minimumRelativeBand) * std::fabs(at.centre);
        const double noise = std::max(std::isfinite(at.noise) ? at.noise : 0.0,
                                      std::isfinite(leaving.noise[row]) ? leaving.noise[row] : 0.0);
        d.halfWidth = std::max(config.bandSigmas * noise, minimum);
    }
    result.step = step;
    const auto units = [logScale](double y) { return logScale ? std::pow(10.0, y) : y; };
    result.leavingRun = bFirst ? 1 : 0;
    // What left: the run's rolling median there, or its value where that is not finite.
    result.leavingValue = leaving.finite[row] && std::isfinite(leaving.centre[row]) ? units(leaving.centre[row])
                                                                                   : leavingSeries.values[row];
    result.bandCentre = units(d.centre);
    result.bandLow = units(d.centre - d.halfWidth);
    result.bandHigh = units(d.centre + d.halfWidth);
    return result;
}

} // namespace nanscope
