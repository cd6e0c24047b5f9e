// Comparing runs: where a run parts ways with another (the first step it leaves the other's noise
// band and stays out), never for two runs of the same noisy process, across logging rates, run
// lengths and NaN; and which incidents one run has that the other lacks.

#include "core/compare/RunComparison.h"
#include "core/open/CompareRunSources.h"
#include "core/run/MemoryRunSource.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace nanscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A decaying training loss with multiplicative noise (0.04 decades), one value per `every` steps.
// `bend` may change a value after it is drawn (a blow-up, a NaN).
StepSeries noisyLoss(int64_t steps, uint32_t seed, int64_t every = 1,
                     const std::function<double(int64_t, double)>& bend = {})
{
    std::mt19937 random(seed);
    std::normal_distribution<double> noise(0.0, 0.04);
    StepSeries s;
    for (int64_t step = 0; step < steps; step += every) {
        double value = (0.4 + 2.0 * std::exp(-double(step) / 300.0)) * std::pow(10.0, noise(random));
        if (bend)
            value = bend(step, value);
        s.steps.push_back(step);
        s.values.push_back(value);
    }
    return s;
}

// Grows x10 every 20 steps from `from` on: a gradual blow-up.
std::function<double(int64_t, double)> growsFrom(int64_t from)
{
    return [from](int64_t step, double value) {
        return step < from ? value : value * std::pow(10.0, 0.05 * double(step - from + 1));
    };
}

TEST(SeriesDivergence, RunThatBlowsUpLeavesTheOthersBandWhereItStarts)
{
    const StepSeries healthy = noisyLoss(1500, 7);
    const StepSeries blowsUp = noisyLoss(1500, 7, 1, growsFrom(600));
    const SeriesDivergence d = findDivergence("loss", healthy, blowsUp);
    ASSERT_TRUE(d.diverged());
    EXPECT_GE(*d.step, 600);
    EXPECT_LE(*d.step, 606);
    EXPECT_EQ(d.leavingRun, 1);
    EXPECT_TRUE(d.logScale);
    EXPECT_GT(d.leavingValue, d.bandHigh);
    EXPECT_LT(d.bandLow, d.bandCentre);
    EXPECT_LT(d.bandCentre, d.bandHigh);

    // A sudden jump of x10 is found at its step, whichever run is given first.
    const StepSeries jumps = noisyLoss(1500, 7, 1, [](int64_t step, double v) { return step >= 900 ? v * 10 : v; });
    const SeriesDivergence reversed = findDivergence("loss", jumps, healthy);
    ASSERT_TRUE(reversed.diverged());
    EXPECT_EQ(*reversed.step, 900);
    EXPECT_EQ(reversed.leavingRun, 0);
}

TEST(SeriesDivergence, TwoRunsOfTheSameNoisyProcessNeverDiverge)
{
    for (uint32_t seed = 1; seed <= 5; ++seed) {
        const SeriesDivergence d = findDivergence("loss", noisyLoss(3000, seed), noisyLoss(3000, seed + 100));
        EXPECT_FALSE(d.diverged()) << "seed " << seed << ": diverged at " << *d.step;
        EXPECT_EQ(d.firstCommonStep, 0);
        EXPECT_EQ(d.lastCommonStep, 2999);
        EXPECT_GT(d.comparedPoints, 5000);
    }
    // The same values exactly (a shared learning-rate schedule) are together, not a division by zero.
    const StepSeries schedule{{0, 1, 2, 3, 4, 5}, {1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4}};
    EXPECT_FALSE(findDivergence("lr", schedule, schedule).diverged());
}

TEST(SeriesDivergence, DifferentLoggingRatesAreComparedOnTheirOwnSteps)
{
    // One run logs every step, the other every 10th: same process, no divergence...
    const StepSeries everyStep = noisyLoss(2000, 3);
    EXPECT_FALSE(findDivergence("loss", everyStep, noisyLoss(2000, 4, 10)).diverged());
    // ...and a blow-up of the sparse run is found within its logging interval.
    const SeriesDivergence d = findDivergence("loss", everyStep, noisyLoss(2000, 4, 10, growsFrom(1200)));
    ASSERT_TRUE(d.diverged());
    EXPECT_GE(*d.step, 1200);
    EXPECT_LE(*d.step, 1220);
    EXPECT_EQ(d.leavingRun, 1);
}

TEST(SeriesDivergence, ANonfiniteRunLeavesTheBandAndTwoNonfiniteRunsStayTogether)
{
    const auto nanFrom = [](int64_t from) {
        return [from](int64_t step, double v) { return step >= from ? kNaN : v; };
    };
    const StepSeries healthy = noisyLoss(1000, 11);
    const SeriesDivergence d = findDivergence("grad_norm", healthy, noisyLoss(1000, 11, 1, nanFrom(450)));
    ASSERT_TRUE(d.diverged());
    EXPECT_EQ(*d.step, 450);
    EXPECT_TRUE(d.leftNonfinite());
    EXPECT_EQ(d.leavingRun, 1);

    // Both broken at the same step: they do not part ways there.
    EXPECT_FALSE(findDivergence("grad_norm", noisyLoss(1000, 11, 1, nanFrom(450)), noisyLoss(1000, 11, 1, nanFrom(450)))
                     .diverged());
    // A series NaN throughout in both runs compares to "never", not to a crash.
    const StepSeries allNan{{0, 1, 2}, {kNaN, kNaN, kNaN}};
    EXPECT_FALSE(findDivergence("loss", allNan, allNan).diverged());
    // A one-step NaN that the run recovers from is not a lasting departure.
    const StepSeries oneNan = noisyLoss(1000, 11, 1, [](int64_t step, double v) { return step == 300 ? kNaN : v; });
    EXPECT_FALSE(findDivergence("loss", healthy, oneNan).diverged());
}

TEST(SeriesDivergence, NegativeSeriesAreComparedOnTheirValues)
{
    StepSeries a, b;
    for (int64_t step = 0; step < 400; ++step) {
        a.steps.push_back(step);
        b.steps.push_back(step);
        a.values.push_back(-1.0 + 0.01 * std::sin(double(step)));
        b.values.push_back(step < 250 ? a.values.back() : a.values.back() + 0.5);
    }
    const SeriesDivergence d = findDivergence("elbo", a, b);
    EXPECT_FALSE(d.logScale);
    ASSERT_TRUE(d.diverged());
    EXPECT_EQ(*d.step, 250);
}

std::unique_ptr<MemoryRunSource> memoryRun(const std::string& name, const StepSeries& loss, const StepSeries& gradNorm)
{
    RunInfo info;
    info.runName = name;
    info.directory = "/runs/" + name;
    info.source.format = "test";
    auto run = std::make_unique<MemoryRunSource>(info);
    EXPECT_EQ(loss.steps, gradNorm.steps);
    std::vector<double> epoch(loss.steps.size(), 1.0);
    run->addSeriesTable("scalars", loss.steps, {{"loss", loss.values}, {"grad_norm", gradNorm.values}, {"epoch", epoch}});
    return run;
}

TEST(RunComparison, ComparesEveryRunWithTheFirstAndSaysWhereAndWhatDiffers)
{
    auto healthy = memoryRun("healthy", noisyLoss(1200, 21), noisyLoss(1200, 22));
    auto twin = memoryRun("twin", noisyLoss(1200, 31), noisyLoss(1200, 32));
    auto broken = memoryRun("broken", noisyLoss(1200, 21, 1, growsFrom(700)),
                            noisyLoss(1200, 22, 1, [](int64_t step, double v) { return step >= 700 ? v * 1e4 : v; }));
    auto comparison = compareRunSources({healthy.get(), twin.get(), broken.get()}, {"healthy", "twin", "broken"});
    ASSERT_TRUE(comparison) << comparison.error();
    ASSERT_EQ(comparison->runs.size(), 3u);
    ASSERT_EQ(comparison->pairs.size(), 2u);

    const RunPairComparison& withTwin = comparison->pairs[0];
    EXPECT_EQ(withTwin.otherRun, 1u);
    EXPECT_EQ(withTwin.firstDivergence(), nullptr);
    ASSERT_EQ(withTwin.series.size(), 2u); // loss and grad_norm; the epoch counter is not compared
    EXPECT_TRUE(withTwin.onlyInOther.empty());

    const RunPairComparison& withBroken = comparison->pairs[1];
    const SeriesDivergence* first = withBroken.firstDivergence();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->series, "grad_norm"); // the x10^4 jump is at 700; the loss grows from there
    EXPECT_EQ(*first->step, 700);
    EXPECT_EQ(withBroken.series.front().series, "grad_norm"); // diverged series first, by step

    // The blow-up is the broken run's alone.
    bool blowupOnlyInBroken = false;
    for (const IncidentDifference& d : withBroken.incidents) {
        EXPECT_NE(d.presence, IncidentPresence::OnlyReference) << toString(d.kind);
        if (d.presence == IncidentPresence::OnlyOther && d.kind == IncidentKind::Blowup)
            blowupOnlyInBroken = d.other->onsetStep >= 650 && d.other->onsetStep <= 710;
    }
    EXPECT_TRUE(blowupOnlyInBroken);
}

TEST(RunComparison, RunsOfDifferentLengthsAreComparedOverTheShorter)
{
    auto longRun = memoryRun("long", noisyLoss(2000, 41), noisyLoss(2000, 42));
    auto shortRun = memoryRun("short", noisyLoss(800, 43), noisyLoss(800, 44));
    auto comparison = compareRunSources({longRun.get(), shortRun.get()}, {"long", "short"});
    ASSERT_TRUE(comparison) << comparison.error();
    const RunPairComparison& pair = comparison->pairs[0];
    EXPECT_EQ(pair.firstDivergence(), nullptr);
    for (const SeriesDivergence& s : pair.series)
        EXPECT_EQ(s.lastCommonStep, 799);
    ASSERT_FALSE(pair.notes.empty());
    EXPECT_NE(pair.notes.front().find("short ends at step 799"), std::string::npos) << pair.notes.front();

    EXPECT_FALSE(compareRuns({}).ok()); // one run is no comparison
}

Incident incident(IncidentKind kind, int64_t onset, Severity severity, std::optional<BlowupPattern> pattern = {})
{
    Incident i;
    i.kind = kind;
    i.onsetStep = onset;
    i.severity = severity;
    i.pattern = pattern;
    return i;
}

TEST(IncidentDifferences, MatchesByKindAndNearOnsetAndSaysWhatDiffers)
{
    ScanReport reference, other;
    reference.lastStep = other.lastStep = 1000;
    reference.incidents = {incident(IncidentKind::Blowup, 400, Severity::Critical, BlowupPattern::Sudden),
                           incident(IncidentKind::BnCorruption, 420, Severity::Critical)};
    other.incidents = {incident(IncidentKind::Blowup, 430, Severity::Critical, BlowupPattern::Gradual),
                       incident(IncidentKind::Spike, 100, Severity::Warning),
                       // Same kind, far from the reference's: another incident, not the same one.
                       incident(IncidentKind::BnCorruption, 900, Severity::Warning)};
    const auto differences = compareIncidents(reference, other, incidentMatchTolerance(reference, other));
    ASSERT_EQ(differences.size(), 4u);
    EXPECT_EQ(differences[0].presence, IncidentPresence::OnlyOther); // spike at 100 (by onset)
    EXPECT_EQ(differences[0].kind, IncidentKind::Spike);
    EXPECT_EQ(differences[1].presence, IncidentPresence::Both); // blow-up 400 vs 430
    EXPECT_EQ(differences[1].onsetShift, 30);
    ASSERT_EQ(differences[1].differences.size(), 1u);
    EXPECT_EQ(differences[1].differences[0], "pattern sudden vs gradual");
    EXPECT_EQ(differences[2].presence, IncidentPresence::OnlyReference); // BN at 420
    EXPECT_EQ(differences[3].presence, IncidentPresence::OnlyOther);     // BN at 900
    EXPECT_EQ(differences[3].other->onsetStep, 900);
}

} // namespace
} // namespace nanscope
