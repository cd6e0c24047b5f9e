#pragma once

// Where two runs' logs of one series part ways: the first step at which one run's value leaves the
// other run's noise band (its rolling median +- k robust sigmas) and stays out. A function of two
// in-memory series, so it is tested without files. docs/compare.md describes the method.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// One logged series of one run: values on ascending steps (one value per step).
struct StepSeries
{
    std::vector<int64_t> steps;
    std::vector<double> values;

    size_t size() const { return std::min(steps.size(), values.size()); }
    bool empty() const { return size() == 0; }
};

struct DivergenceConfig
{
    // Rows (logged points) of the rolling window the band's centre and noise are measured on.
    int windowRows = 21;
    // The band's half-width in robust sigmas (median absolute deviation scaled to a normal sigma).
    double bandSigmas = 4.0;
    // A departure counts when this many consecutive compared points are outside (fewer where the
    // overlap ends first): a one-point spike that recovers is not a divergence.
    int persistPoints = 3;
    // The band is never narrower than this fraction of its centre: two runs whose series agree to
    // the last digit (a shared learning-rate schedule) do not diverge on rounding.
    double minimumRelativeBand = 0.05;
};

// What the comparison of one series found. The band and the value that left it are in the
// series' own units.
struct SeriesDivergence
{
    std::string series;          // the dataset name ("loss", "grad_norm", "eval_loss", ...)
    int64_t firstCommonStep = 0; // the steps both runs logged it over
    int64_t lastCommonStep = 0;
    int64_t comparedPoints = 0;  // points of either run checked against the other's band
    bool logScale = false;       // compared on log10 (every finite value of both runs positive)
    // The first step of a lasting departure; empty when the runs never part (within the overlap).
    std::optional<int64_t> step;
    // Who left whose band there: 0 the first run given, 1 the second.
    int leavingRun = 0;
    double leavingValue = 0;     // the leaving run's rolling median there; NaN/Inf when it went non-finite
    double bandCentre = 0;       // the other run's rolling median at that step
    double bandLow = 0;
    double bandHigh = 0;

    bool diverged() const { return step.has_value(); }
    bool leftNonfinite() const;
};

// Compares `a` and `b` over the steps both logged. Steps need not match (another logging rate):
// at each logged point of either run, its rolling median is checked against the other run's band
// interpolated at that step. A point where one run is NaN/Inf and the other is finite counts as
// leaving; both non-finite counts as together.
SeriesDivergence findDivergence(const std::string& series, const StepSeries& a, const StepSeries& b,
                                const DivergenceConfig& config = {});

} // namespace nanscope
