// The instability signatures of issue 14 on series held in memory: where a NaN was born (weights
// or forward pass), a blow-up that begins in a module's activations before the gradient norm
// shows it, an activation range growing toward the float16 limit, what a recovered spike left
// behind, the spike score, the gradient norm's lead over the loss, and Adam epsilon domination.
#include "core/scan/ScanContext.h"
#include "core/scan/ScanInputs.h"
#include "core/scan/ScanRules.h"
#include "core/scan/Signatures.h"

#include "NoisyScanRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// An ordinary run: the loss decays from 1.7 to 0.2 over a few hundred steps.
struct TrainingRun : test::NoisyScanRun
{
    explicit TrainingRun(int64_t count, uint32_t seed = 3)
        : NoisyScanRun(
              count, [](int64_t step) { return 1.5 * std::exp(-double(step) / 100.0) + 0.2; }, 0.05, 0.1, seed)
    {
    }
};

// One huge learning-rate step at row `at` under an Adam-family optimizer: the gradient norm jumps
// x1e4 and stays x300 up; the loss jumps x1e4 and decays a decade every `lossDecayRows` rows down
// to `lossFloor` x its level (0 rows: straight to the floor).
void hugeStepUnderAdam(TrainingRun& run, size_t at, double lossDecayRows, double lossFloor)
{
    for (size_t r = at; r < run.steps.size(); ++r) {
        run.gradNorm[r] *= r == at ? 1e4 : 300;
        run.loss[r] *= lossDecayRows > 0 ? std::max(lossFloor, 1e4 * std::pow(10.0, -double(r - at) / lossDecayRows))
                                         : lossFloor;
    }
}

const Incident* find(const ScanContext& context, IncidentKind kind)
{
    for (const auto& incident : context.report.incidents)
        if (incident.kind == kind)
            return &incident;
    return nullptr;
}

} // namespace

TEST(NonfiniteOrigin, NaNWrittenIntoTheWeightsByOneUpdateIsSuddenAtThatStepInThatParameter)
{
    TrainingRun run(300);
    for (size_t r = 220; r < 300; ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    // fc.weight is fine throughout until the NaN spreads; aux.weight is NaN from step 220 on.
    inputs.addTable("layers", {"fc.weight", "aux.weight"}, run.steps,
                    {{"grad_norm", run.table(2, [](int64_t step, size_t) { return step >= 220 ? NAN : 1.f; })},
                     {"param_norm", run.table(2, [](int64_t step, size_t c) {
                          return (c == 1 && step >= 220) || step >= 221 ? NAN : 3.f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    // Born in the update of step 219: its gradients and weights were finite, step 220's weights not.
    EXPECT_EQ(blowup->onsetStep, 219);
    EXPECT_EQ(blowup->nonfiniteStep, 220);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden);
    EXPECT_EQ(blowup->evidence.nonfiniteOrigin, NonfiniteOrigin::Parameters);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "aux.weight");
    EXPECT_NE(blowup->cause.find("optimizer update"), std::string::npos) << blowup->cause;
}

TEST(NonfiniteOrigin, ANaNLossWithFiniteWeightsIsBornInTheForwardPass)
{
    TrainingRun run(300);
    for (size_t r = 220; r < 300; ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"fc.weight"}, run.steps,
                    {{"param_norm", run.table(1, [](int64_t step, size_t) { return step >= 221 ? NAN : 3.f; })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->evidence.nonfiniteOrigin, NonfiniteOrigin::Forward);
}

TEST(Precursor, AttentionLogitsGrowingLongBeforeTheGradientNormMakeAGradualBlowupFromWhereTheyBegan)
{
    TrainingRun run(320);
    // The gradient norm is flat until the logits overflow float16 at step 250.
    for (size_t r = 250; r < 320; ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("activations", {"encoder", "attn.scores", "head"}, run.steps,
                    {{"max", run.table(3, [](int64_t step, size_t c) {
                          if (step >= 250)
                              return c == 0 ? 2.f : NAN;
                          if (c != 1 || step < 100)
                              return 2.f;
                          return float(2.0 * std::pow(10.0, double(step - 100) / 30.0)); // x10 every 30 steps
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual);
    EXPECT_GE(blowup->onsetStep, 98);
    EXPECT_LE(blowup->onsetStep, 115);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "attn.scores");
    ASSERT_TRUE(blowup->evidence.float16HeadroomDecades);
    EXPECT_LT(*blowup->evidence.float16HeadroomDecades, 0.5) << "it reached the float16 limit";
    EXPECT_NE(blowup->suggestion.find("z-loss"), std::string::npos) << blowup->suggestion;
}

// Logged every 5 steps: by the first bad row every parameter is NaN (the updates in between spread
// it), which alone would read as a NaN born in the weights. The attention logits drifted slowly for
// a long time, then grew x10 every 30 steps from step 170 into the float16 limit: a gradual blow-up
// from where that growth began (not where the drift crossed the noise), first in attn.scores.
TEST(Precursor, GrowthIntoTheFloat16LimitWinsOverWeightsAlreadyNonfiniteAtASparseRow)
{
    TrainingRun run(100);
    for (auto& step : run.steps)
        step *= 5;
    for (size_t r = 60; r < 100; ++r) // step 300 on
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("activations", {"encoder", "attn.scores"}, run.steps,
                    {{"max", run.table(2, [](int64_t step, size_t c) {
                          if (step >= 300)
                              return NAN;
                          if (c == 0)
                              return 2.f;
                          const double drift = 2.0 + 2.0 * double(std::min<int64_t>(step, 170)) / 170.0;
                          return float(step < 170 ? drift : drift * std::pow(10.0, double(step - 170) / 30.0));
                      })}});
    inputs.addTable("layers", {"encoder.weight", "attn.query.weight"}, run.steps,
                    {{"grad_norm", run.table(2, [](int64_t step, size_t) { return step >= 300 ? NAN : 1.f; })},
                     {"param_norm", run.table(2, [](int64_t step, size_t) { return step >= 300 ? NAN : 3.f; })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual);
    EXPECT_GE(blowup->onsetStep, 160);
    EXPECT_LE(blowup->onsetStep, 185);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "attn.scores");
    EXPECT_NE(blowup->evidence.nonfiniteOrigin, NonfiniteOrigin::Parameters) << "the growth came first";
}

// Logged every 5 steps, stable, then every parameter NaN at the first bad row: which layer went
// first cannot be read, so none is named (the forward-order first would be a guess), and the text
// says so and points at replaying the checkpoint before.
TEST(NonfiniteOrigin, EveryParameterNonfiniteAtASparseFirstBadRowNamesNoLayer)
{
    TrainingRun run(100);
    for (auto& step : run.steps)
        step *= 5;
    for (size_t r = 60; r < 100; ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"fc.weight", "aux.weight", "head.weight"}, run.steps,
                    {{"grad_norm", run.table(3, [](int64_t step, size_t) { return step >= 300 ? NAN : 1.f; })},
                     {"param_norm", run.table(3, [](int64_t step, size_t) { return step >= 300 ? NAN : 3.f; })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->onsetStep, 300);
    EXPECT_TRUE(blowup->layers.empty()) << blowup->layers.front();
    EXPECT_NE(blowup->cause.find("cannot be read from the logs"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->suggestion.find("replay the checkpoint before step 300"), std::string::npos)
        << blowup->suggestion;
}

TEST(ActivationGrowthRule, ARangeGrowingTowardTheFloat16LimitIsAWarningBeforeItOverflows)
{
    TrainingRun run(300);
    ScanInputs inputs = run.inputs();
    inputs.addTable("activations", {"attn.scores", "head"}, run.steps,
                    {{"max", run.table(2, [](int64_t step, size_t c) {
                          return c == 0 && step >= 150 ? float(3.0 * std::pow(10.0, double(step - 150) / 40.0)) : 3.f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectActivationGrowth(context));
    const Incident* growth = find(context, IncidentKind::ActivationGrowth);
    ASSERT_TRUE(growth);
    EXPECT_EQ(growth->severity, Severity::Warning);
    EXPECT_NEAR(double(growth->onsetStep), 150.0, 12.0);
    ASSERT_TRUE(growth->evidence.float16HeadroomDecades);
    // 3 * 10^(149/40) = 1.6e4: 0.6 decades below 65504, not overflowed yet.
    EXPECT_NEAR(*growth->evidence.float16HeadroomDecades, 0.6, 0.1);
    EXPECT_NE(growth->suggestion.find("QK"), std::string::npos) << growth->suggestion;

    // A range that is large but steady is no warning.
    ScanInputs steady = run.inputs();
    steady.addTable("activations", {"embedding"}, run.steps, {{"max", run.table(1, [](int64_t, size_t) { return 3e4f; })}});
    ScanContext quiet(steady, ScanConfig{});
    ASSERT_TRUE(detectActivationGrowth(quiet));
    EXPECT_TRUE(quiet.report.incidents.empty());
}

TEST(SpikeAftermath, ALayerWhoseGradientIsExactlyZeroFromTheSpikeOnIsReportedDead)
{
    TrainingRun run(400);
    run.gradNorm[200] *= 1e4;
    run.loss[200] *= 1e4;
    for (size_t r = 201; r < 400; ++r)
        run.loss[r] *= 3; // a higher plateau after it
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"encoder.weight", "ffn.fc1.weight", "head.weight"}, run.steps,
                    {{"grad_norm", run.table(3, [](int64_t step, size_t c) {
                          return c == 1 && step > 200 ? 0.f : 0.5f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    ASSERT_TRUE(detectSpikes(context));
    ASSERT_TRUE(detectSpikeAftermath(context));
    EXPECT_FALSE(find(context, IncidentKind::Blowup));
    const Incident* spike = find(context, IncidentKind::Spike);
    ASSERT_TRUE(spike);
    EXPECT_EQ(spike->onsetStep, 200);
    EXPECT_EQ(spike->evidence.deadAfter, std::vector<std::string>{"ffn.fc1.weight"});
    ASSERT_TRUE(spike->evidence.lossPlateauRatio);
    // x3 on a loss that keeps decaying: about x2 against the 50 rows before.
    EXPECT_GT(*spike->evidence.lossPlateauRatio, 1.5);
    EXPECT_LT(*spike->evidence.lossPlateauRatio, 3.5);
    EXPECT_NE(spike->suggestion.find("LeakyReLU"), std::string::npos) << spike->suggestion;
    // It was not an outlier the optimiser absorbed, whatever a spike that recovered usually is.
    EXPECT_NE(spike->cause.find("not without a trace: one huge update moved the weights"), std::string::npos)
        << spike->cause;
    EXPECT_EQ(spike->cause.find("absorbed"), std::string::npos) << spike->cause;
}

// Adam after one huge learning-rate step: the loss jumps x1e4 and decays back into its band over
// ~30 rows, while the gradient norm stays x300 above its old level to the end. The loss came
// back: a recovered spike that left a high gradient-norm level behind, not a blow-up.
TEST(SpikeRecovery, TheLossComingBackMakesASpikeHoweverLongTheGradientNormStaysHigh)
{
    TrainingRun run(400);
    hugeStepUnderAdam(run, 200, /*lossDecayRows=*/8, /*lossFloor=*/1.5);
    ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    ASSERT_TRUE(detectSpikes(context));
    ASSERT_TRUE(detectSpikeAftermath(context));
    EXPECT_FALSE(find(context, IncidentKind::Blowup));
    const Incident* spike = find(context, IncidentKind::Spike);
    ASSERT_TRUE(spike);
    EXPECT_EQ(spike->onsetStep, 200);
    EXPECT_EQ(spike->severity, Severity::Warning);
    ASSERT_TRUE(spike->evidence.gradientLevelRatio);
    EXPECT_GT(*spike->evidence.gradientLevelRatio, 100.0);
    EXPECT_NE(spike->cause.find("left behind"), std::string::npos) << spike->cause;
}

// The same jump whose loss stays x50 above its level to the end: the training did not come back,
// a critical blow-up at the jump, however the gradient norm behaves.
TEST(SpikeRecovery, ALossThatDoesNotComeBackIsABlowupAtTheJump)
{
    TrainingRun run(400);
    hugeStepUnderAdam(run, 200, /*lossDecayRows=*/8, /*lossFloor=*/50);
    ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->severity, Severity::Critical);
    EXPECT_NEAR(double(blowup->onsetStep), 200.0, 1.0);
}

// Logged every 10 steps: the training of TrainingRun, one row in ten.
TrainingRun everyTenthStep(const TrainingRun& run)
{
    TrainingRun sparse(0);
    for (size_t r = 0; r < run.steps.size(); r += 10) {
        sparse.steps.push_back(run.steps[r]);
        sparse.loss.push_back(run.loss[r]);
        sparse.gradNorm.push_back(run.gradNorm[r]);
    }
    return sparse;
}

// With sparse logging the log after a jump has few rows but many steps: a loss that stayed x50 up
// for 14 rows logged every 10 steps (140 steps) did not come back; that is a blow-up at the jump,
// not "too early to tell" followed by a warning per row.
TEST(SpikeRecovery, ALossThatStaysUpForManyStepsOfASparseLogIsABlowup)
{
    TrainingRun run(400);
    hugeStepUnderAdam(run, 250, /*lossDecayRows=*/0, /*lossFloor=*/50);
    ScanInputs inputs = everyTenthStep(run).inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    ASSERT_TRUE(detectSpikes(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->severity, Severity::Critical);
    EXPECT_EQ(blowup->onsetStep, 250);
    EXPECT_FALSE(find(context, IncidentKind::Spike));
}

// Spikes on logged rows next to each other are one event, whatever the logging interval.
TEST(SpikeRule, SpikesOnConsecutiveRowsOfASparseLogAreOneIncident)
{
    TrainingRun run(600);
    for (size_t r = 300; r < 330; ++r)
        run.gradNorm[r] *= 1e3; // three logged rows: 300, 310, 320
    ScanInputs inputs = everyTenthStep(run).inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    ASSERT_TRUE(detectSpikes(context));
    std::vector<const Incident*> spikes;
    for (const auto& incident : context.report.incidents)
        if (incident.kind == IncidentKind::Spike)
            spikes.push_back(&incident);
    ASSERT_EQ(spikes.size(), 1u);
    EXPECT_EQ(spikes[0]->onsetStep, 300);
    ASSERT_TRUE(spikes[0]->evidence.count);
    EXPECT_EQ(*spikes[0]->evidence.count, 3);
    EXPECT_EQ(spikes[0]->evidence.windowEndStep, 320);
}

TEST(SpikeScore, IsTheShareOfStepsFarAboveTheRollingMedian)
{
    TrainingRun run(2000);
    for (size_t r = 100; r < 2000; r += 100)
        run.gradNorm[r] *= 1e3; // 19 of 2000 rows
    const LogSeries s = makeLogSeries(run.steps, run.gradNorm);
    const auto spikes = spikeRows(s);
    const auto share = spikeShare(s, spikes, s.size());
    ASSERT_TRUE(share);
    EXPECT_NEAR(*share, 19.0 / 2000.0, 0.002);
    const LogSeries quiet = makeLogSeries(TrainingRun(2000, 5).steps, TrainingRun(2000, 5).gradNorm);
    EXPECT_LT(*spikeShare(quiet, spikeRows(quiet), quiet.size()), 0.001);
}

// spikeRows keeps its window sorted as it slides; its verdicts must be those of selecting the
// median and deviation afresh from a copy of the window (what it did before), row for row, on
// series with NaN rows, repeated values, uneven steps, and thresholds low enough that any change
// in either figure flips rows.
TEST(SpikeScore, TheSlidingWindowJudgesEveryRowAsSelectingAfreshDoes)
{
    auto selectingAfresh = [](const LogSeries& s, int64_t windowSteps, double sigmas) {
        std::vector<uint8_t> out(s.size(), 0);
        double median = kNaN, deviation = kNaN;
        size_t windowBegin = 0;
        std::vector<double> window;
        for (size_t r = 0; r < s.size(); ++r) {
            while (windowBegin < r && s.steps[windowBegin] < s.steps[r] - windowSteps)
                ++windowBegin;
            if (r % 16 == 0 || !std::isfinite(median)) {
                window.clear();
                for (size_t k = windowBegin; k < r; ++k)
                    if (s.finite[k])
                        window.push_back(s.log[k]);
                if (window.size() >= 10) {
                    median = medianInPlace(window);
                    deviation = std::max(0.01, noiseAroundInPlace(window, median));
                } else {
                    median = deviation = kNaN;
                }
            }
            if (s.finite[r] && std::isfinite(median) && s.log[r] > median + sigmas * deviation)
                out[r] = 1;
        }
        return out;
    };
    std::mt19937 random(7);
    for (int series = 0; series < 12; ++series) {
        std::vector<int64_t> steps;
        std::vector<double> values;
        int64_t step = 0;
        const double quantum = series % 3 == 0 ? 0.25 : 0.0; // repeated values in every third
        std::normal_distribution<double> noise(0.0, 0.3);
        for (int r = 0; r < 6000; ++r) {
            step += 1 + int64_t(random() % (series % 2 ? 7 : 1));
            double v = std::pow(10.0, noise(random) + (r % 997 == 0 ? 2.0 : 0.0));
            if (quantum > 0)
                v = std::pow(10.0, std::round(std::log10(v) / quantum) * quantum);
            if (random() % 50 == 0)
                v = kNaN;
            steps.push_back(step);
            values.push_back(v);
        }
        const LogSeries s = makeLogSeries(steps, values);
        for (const int64_t window : {int64_t(40), int64_t(1000)})
            for (const double sigmas : {0.0, 0.5, 1.0, 7.0}) {
                const auto expected = selectingAfresh(s, window, sigmas);
                const auto got = spikeRows(s, window, sigmas);
                ASSERT_EQ(got, expected) << "series " << series << ", window " << window << ", sigmas " << sigmas;
            }
    }
}

TEST(GradientLead, TheGradientNormRisingBeforeTheLossIsMeasuredInSteps)
{
    TrainingRun run(300);
    for (size_t r = 150; r < 300; ++r) {
        run.gradNorm[r] *= std::pow(10.0, double(r - 150) / 25.0);
        if (r >= 180)
            run.loss[r] *= std::pow(10.0, double(r - 180) / 25.0);
        if (r >= 260)
            run.loss[r] = run.gradNorm[r] = NAN;
    }
    const ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = find(context, IncidentKind::Blowup);
    ASSERT_TRUE(blowup);
    ASSERT_TRUE(blowup->evidence.gradLeadSteps);
    EXPECT_NEAR(double(*blowup->evidence.gradLeadSteps), 30.0, 8.0);
}

TEST(AdamEpsilonRule, ALargeShareOfElementsDominatedByEpsIsAWarningNamingTheParameters)
{
    TrainingRun run(100);
    ScanInputs inputs = run.inputs();
    ScanFacts facts;
    facts.optimizerStates.push_back(
        {500, "checkpoint-500/optimizer.pt", {{"fc.weight", 0.95, 1000, 1e-2}, {"fc.bias", 0.1, 10, 1e-2}}});
    inputs.setFacts(facts);
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectAdamEpsilon(context));
    const Incident* eps = find(context, IncidentKind::AdamEpsilon);
    ASSERT_TRUE(eps);
    EXPECT_EQ(eps->layers, std::vector<std::string>{"fc.weight"});
    ASSERT_TRUE(eps->evidence.epsilonDominatedShare);
    EXPECT_NEAR(*eps->evidence.epsilonDominatedShare, (950.0 + 1.0) / 1010.0, 1e-6);
    EXPECT_NE(eps->suggestion.find("eps=0"), std::string::npos) << eps->suggestion;

    ScanInputs fine = run.inputs();
    facts.optimizerStates.front().parameters = {{"fc.weight", 0.01, 1000, 1e-8}};
    fine.setFacts(facts);
    ScanContext quiet(fine, ScanConfig{});
    ASSERT_TRUE(detectAdamEpsilon(quiet));
    EXPECT_TRUE(quiet.report.incidents.empty());
}

// A 1e30 sample at step 180 lifts the layer's output for one step: that is the bad batch (its own
// incident), not a growth toward the float16 limit; without a bad batch to explain it, the text
// says "jumped at step N", never "grew between steps 180 and 180".
TEST(ActivationGrowthRule, AOneStepJumpIsNoGrowthAndIsNotWordedAsOne)
{
    TrainingRun run(300);
    const auto activations = [&] {
        return std::map<std::string, std::vector<float>>{{"max", run.table(1, [](int64_t step, size_t) {
                                                               return step == 180 ? 1.1e30f : 2.3f;
                                                           })}};
    };
    ScanInputs inputs = run.inputs();
    inputs.addTable("activations", {"fc1"}, run.steps, activations());
    ScanContext explained(inputs, ScanConfig{});
    Incident batch;
    batch.kind = IncidentKind::BadInput;
    batch.onsetStep = batch.evidence.windowEndStep = 180;
    explained.badInputs.push_back(batch);
    ASSERT_TRUE(detectActivationGrowth(explained));
    EXPECT_EQ(find(explained, IncidentKind::ActivationGrowth), nullptr);

    ScanContext unexplained(inputs, ScanConfig{});
    ASSERT_TRUE(detectActivationGrowth(unexplained));
    const Incident* growth = find(unexplained, IncidentKind::ActivationGrowth);
    ASSERT_NE(growth, nullptr);
    EXPECT_EQ(growth->cause.find("between steps 180 and 180"), std::string::npos) << growth->cause;
    EXPECT_NE(growth->cause.find("jumped"), std::string::npos) << growth->cause;
}
