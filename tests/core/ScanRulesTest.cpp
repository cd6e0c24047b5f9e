// Each scan rule on its own, on series held in memory: no run file, no other rule, and the facts a
// rule hands to the later ones (ScanContext) set by hand where a test needs them.
#include "core/scan/ScanRules.h"
#include "core/scan/ScanContext.h"
#include "core/scan/ScanInputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

std::vector<int64_t> stepsUpTo(int64_t count)
{
    std::vector<int64_t> steps;
    for (int64_t step = 0; step < count; ++step)
        steps.push_back(step);
    return steps;
}

// Ordinary training: a loss that decays and a gradient norm around `level`, both with a spread of
// noiseDecades between rows.
struct NoisyRun
{
    explicit NoisyRun(int64_t count, double level = 1.0, double noiseDecades = 0.1, uint32_t seed = 7)
        : steps(stepsUpTo(count))
    {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 1.0);
        for (int64_t step = 0; step < count; ++step) {
            loss.push_back((2.0 * std::exp(-double(step) / 150.0) + 0.1) * std::pow(10.0, noiseDecades * noise(rng)));
            gradNorm.push_back(level * std::pow(10.0, noiseDecades * noise(rng)));
        }
    }

    ScanInputs inputs(std::map<std::string, std::vector<double>> more = {}) const
    {
        more["loss"] = loss;
        more["grad_norm"] = gradNorm;
        return ScanInputs::fromMemory(steps, more);
    }

    std::vector<int64_t> steps;
    std::vector<double> loss;
    std::vector<double> gradNorm;
};

// Runs `rule` alone; the one incident it found, or nothing (and a failure) when it found another
// number of them.
std::optional<Incident> onlyIncident(ScanContext& context, ScanRule rule)
{
    const Status status = rule(context);
    EXPECT_TRUE(status) << status.error();
    EXPECT_EQ(context.report.incidents.size(), 1u);
    if (!status || context.report.incidents.size() != 1)
        return std::nullopt;
    return context.report.incidents.front();
}

// What a user reads first: the kind, how bad, and where it began.
void expectIncident(const Incident& incident, IncidentKind kind, Severity severity, int64_t onsetStep)
{
    EXPECT_EQ(incident.kind, kind) << toString(incident.kind);
    EXPECT_EQ(incident.severity, severity) << toString(incident.severity);
    EXPECT_EQ(incident.onsetStep, onsetStep);
}

// A [steps, columns] table whose column c is `value(step, c)`, row-major.
std::vector<float> table(int64_t steps, size_t columns, const std::function<float(int64_t, size_t)>& value)
{
    std::vector<float> values;
    for (int64_t step = 0; step < steps; ++step)
        for (size_t c = 0; c < columns; ++c)
            values.push_back(value(step, c));
    return values;
}

// The run with a non-finite gradient norm (and loss, when `lossToo`) at `row`, a step the
// training skipped.
ScanInputs skippedNonfiniteAt(NoisyRun& run, size_t row, bool lossToo)
{
    run.gradNorm[row] = NAN;
    if (lossToo)
        run.loss[row] = NAN;
    std::vector<double> skipped(run.steps.size(), 0.0);
    skipped[row] = 1;
    return run.inputs({{"skipped", skipped}});
}

} // namespace

TEST(SpikeRule, OneBatchThatJumpsAndRecoversIsAWarningAtThatStep)
{
    NoisyRun run(400);
    run.gradNorm[150] *= 80;
    const ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    const auto spike = onlyIncident(context, detectSpikes);
    ASSERT_TRUE(spike);
    expectIncident(*spike, IncidentKind::Spike, Severity::Warning, 150);
    ASSERT_TRUE(spike->evidence.jumpRatio);
    EXPECT_GT(*spike->evidence.jumpRatio, 20.0);
    EXPECT_NE(spike->cause.find("recovered"), std::string::npos) << spike->cause;
}

TEST(SpikeRule, TheStartOfABlowupIsNotASpike)
{
    NoisyRun run(400);
    for (size_t row = 150; row < run.gradNorm.size(); ++row)
        run.gradNorm[row] *= 80;
    run.gradNorm[120] *= 80; // a real spike before it
    const ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    context.blowupOnsetRow = 150; // what the blow-up rule found
    const auto spike = onlyIncident(context, detectSpikes);
    ASSERT_TRUE(spike);
    EXPECT_EQ(spike->onsetStep, 120);
}

TEST(LossScaleRule, CascadeToTheFloorIsCriticalAndExplainsItsSkippedSteps)
{
    NoisyRun run(400);
    std::vector<double> scale, skipped(400, 0.0);
    double value = 65536;
    for (int64_t step = 0; step < 400; ++step) {
        if (step >= 305 && step < 323) {
            value = std::max(1.0, value / 2);
            skipped[size_t(step)] = 1;
        }
        if (step >= 323)
            skipped[size_t(step)] = 1;
        scale.push_back(value);
    }
    const ScanInputs inputs = run.inputs({{"loss_scale", scale}, {"skipped", skipped}});
    ScanContext context(inputs, ScanConfig{});
    const auto collapse = onlyIncident(context, detectLossScaleCollapse);
    ASSERT_TRUE(collapse);
    expectIncident(*collapse, IncidentKind::LossScaleCollapse, Severity::Critical, 305);
    EXPECT_EQ(collapse->evidence.count, 16) << "65536 halves 16 times down to the floor of 1";
    ASSERT_EQ(context.collapseWindows.size(), 1u);
    EXPECT_EQ(context.collapseWindows.front().first, 305);

    // The skipped steps of the collapse are not a second incident.
    ASSERT_TRUE(detectSkippedSteps(context));
    EXPECT_EQ(context.report.incidents.size(), 1u) << "only the collapse";
}

TEST(SkippedStepsRule, ALongRunOfSkipsIsReportedAndSkippingToTheEndIsCritical)
{
    NoisyRun run(400);
    std::vector<double> skipped(400, 0.0);
    for (size_t row = 150; row < 170; ++row)
        skipped[row] = 1;
    skipped[250] = skipped[251] = 1; // a couple of skips are nothing
    for (size_t row = 380; row < 400; ++row)
        skipped[row] = 1;
    const ScanInputs inputs = run.inputs({{"skipped", skipped}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectSkippedSteps(context));
    const std::vector<Incident>& found = context.report.incidents;
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0].onsetStep, 150);
    EXPECT_EQ(found[0].evidence.count, 20);
    EXPECT_EQ(found[0].severity, Severity::Warning) << "training went on afterwards";
    EXPECT_EQ(found[1].onsetStep, 380);
    EXPECT_EQ(found[1].severity, Severity::Critical) << "still skipping at the end of the log";
}

TEST(BlowupRule, SuddenJumpToNaNStartsAtTheJumpInTheFirstLayer)
{
    NoisyRun run(260);
    for (size_t row = 200; row < 260; ++row) {
        run.gradNorm[row] *= row < 205 ? 1e6 : NAN;
        if (row >= 205)
            run.loss[row] = NAN;
    }
    ScanInputs inputs = run.inputs();
    // Parameter a jumps a step before b: a is blamed first.
    inputs.addTable("layers", {"a.weight", "b.weight"}, run.steps,
                    {{"grad_norm", table(260, 2, [&](int64_t step, size_t c) {
                          const double base = run.gradNorm[size_t(step) % 180];
                          const int64_t jump = c == 0 ? 200 : 201;
                          return float(step >= 205 ? NAN : step >= jump ? base * 1e6 : base);
                      })}});
    ScanContext context(inputs, ScanConfig{});
    const auto blowup = onlyIncident(context, detectNonfiniteAndBlowup);
    ASSERT_TRUE(blowup);
    expectIncident(*blowup, IncidentKind::Blowup, Severity::Critical, 200);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden);
    EXPECT_EQ(blowup->nonfiniteStep, std::optional<int64_t>(205));
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "a.weight");
    EXPECT_EQ(context.blowupOnsetStep, std::optional<int64_t>(200)) << "for the rules after it";
}

TEST(BlowupRule, OneNaNStepTheTrainingSkippedIsARecoveredBurstNotABlowup)
{
    NoisyRun run(400);
    const ScanInputs inputs = skippedNonfiniteAt(run, 180, /*lossToo=*/true);
    ScanContext context(inputs, ScanConfig{});
    const auto burst = onlyIncident(context, detectNonfiniteAndBlowup);
    ASSERT_TRUE(burst);
    expectIncident(*burst, IncidentKind::NonfiniteLoss, Severity::Warning, 180);
    EXPECT_FALSE(context.blowupOnsetStep);
    ASSERT_EQ(context.burstRows.size(), 1u);
}

TEST(BatchNormRule, RunningVarianceCollapsedToZeroIsAWarningOnThatLayer)
{
    NoisyRun run(300);
    ScanInputs inputs = run.inputs();
    inputs.addTable("buffers", {"bn1", "bn2"}, run.steps,
                    {{"nonfinite", table(300, 2, [](int64_t, size_t) { return 0.f; })},
                     {"running_var_min",
                      table(300, 2, [](int64_t step, size_t c) { return c == 1 && step >= 120 ? 1e-12f : 0.5f; })}});
    ScanContext context(inputs, ScanConfig{});
    const auto bn = onlyIncident(context, detectBatchNormCorruption);
    ASSERT_TRUE(bn);
    expectIncident(*bn, IncidentKind::BnCorruption, Severity::Warning, 120);
    EXPECT_EQ(bn->layers, std::vector<std::string>{"bn2"});
}

TEST(BatchNormRule, PoisonedBuffersAfterANaNBatchAreCriticalAndNameTheBatch)
{
    NoisyRun run(300);
    ScanInputs inputs = run.inputs();
    inputs.addTable(
        "buffers", {"bn1", "bn2"}, run.steps,
        {{"nonfinite", table(300, 2, [](int64_t step, size_t c) { return c == 0 && step >= 200 ? 8.f : 0.f; })},
         {"running_var_min", table(300, 2, [](int64_t, size_t) { return 0.5f; })}});
    ScanContext context(inputs, ScanConfig{});
    Incident nanBatch; // what the bad-input rule found
    nanBatch.kind = IncidentKind::BadInput;
    nanBatch.severity = Severity::Critical;
    nanBatch.onsetStep = nanBatch.evidence.windowEndStep = 200;
    context.badInputs.push_back(nanBatch);
    const auto bn = onlyIncident(context, detectBatchNormCorruption);
    ASSERT_TRUE(bn);
    expectIncident(*bn, IncidentKind::BnCorruption, Severity::Critical, 200);
    EXPECT_EQ(bn->layers, std::vector<std::string>{"bn1"});
    EXPECT_NE(bn->cause.find("input batch of step 200"), std::string::npos) << bn->cause;
}

TEST(VanishingRule, ALayerWhoseGradientStopsIsNamedFromWhereItStopped)
{
    NoisyRun run(400);
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"a.weight", "b.weight", "c.weight"}, run.steps,
                    {{"grad_norm", table(400, 3, [&](int64_t step, size_t c) {
                          const float g = float(run.gradNorm[size_t(step)]);
                          return c == 1 && step >= 200 ? g * 1e-6f : g;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    const auto vanishing = onlyIncident(context, detectVanishing);
    ASSERT_TRUE(vanishing);
    EXPECT_EQ(vanishing->kind, IncidentKind::Vanishing);
    EXPECT_EQ(vanishing->severity, Severity::Warning);
    EXPECT_EQ(vanishing->layers, std::vector<std::string>{"b.weight"});
    EXPECT_GE(vanishing->onsetStep, 192) << "judged in cells of 32 rows";
    EXPECT_LE(vanishing->onsetStep, 224);
}

// A head outside the loss through a warm-up (exactly-zero gradient from the first step to 200),
// then trained: a staged training, told in a note, not vanishing gradients. A layer whose gradient
// is merely tiny from the first step, and one that stops later, still are.
TEST(VanishingRule, ALayerThatJoinsTheLossAfterAWarmupIsNotVanishing)
{
    NoisyRun run(400);
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"body.weight", "log_var.weight", "tiny.weight", "head.weight"}, run.steps,
                    {{"grad_norm", table(400, 4, [&](int64_t step, size_t c) {
                          const float g = float(run.gradNorm[size_t(step)]);
                          if (c == 1 && step < 200)
                              return 0.f;
                          if (c == 2 && step < 200)
                              return g * 1e-7f;
                          return g;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    const auto vanishing = onlyIncident(context, detectVanishing);
    ASSERT_TRUE(vanishing);
    EXPECT_EQ(vanishing->layers, std::vector<std::string>{"tiny.weight"});
    ASSERT_EQ(context.report.notes.size(), 1u);
    EXPECT_NE(context.report.notes.front().find("1 parameter(s) had no gradient from the first step, then trained"),
              std::string::npos)
        << context.report.notes.front();
}

// The vanishing rule's stream begins before the rules and learns only later, from the blow-up
// rule, where to stop. Whether that comes before the stream gets there or after it (then the rule
// goes back to a kept state and streams the rest again), the findings are those of streaming in
// place: for every cut, on and off block and cell boundaries, with many blocks of 128 rows.
TEST(VanishingRule, TheStreamBegunBeforeTheRulesFindsWhatStreamingInPlaceFinds)
{
    const int64_t rows = 6000;
    NoisyRun run(rows);
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"a", "b", "c", "d", "e", "f"}, run.steps,
                    {{"grad_norm", table(rows, 6, [&](int64_t step, size_t c) {
                          const float g = float(run.gradNorm[size_t(step)]);
                          if (c == 1 && step >= 1500 && step < 2500)
                              return g * 1e-7f; // vanishes, then recovers
                          if (c == 3 && step >= 4000)
                              return 0.f; // stops for good
                          if (c == 5)
                              return 0.f; // never had a gradient: frozen
                          return g;
                      })}});
    ScanConfig config;
    config.blockRows = 128;
    auto findings = [](const ScanContext& context) {
        std::string text;
        for (const Incident& incident : context.report.incidents) {
            text += std::string(toString(incident.kind)) + " " + toString(incident.severity) + " onset " +
                    std::to_string(incident.onsetStep) + " to " + std::to_string(incident.evidence.windowEndStep) + ":";
            for (const auto& layer : incident.layers)
                text += " " + layer;
            text += " | " + incident.cause + " | " + incident.evidence.note + "\n";
        }
        return text;
    };
    for (const std::optional<int64_t> cut : {std::optional<int64_t>(), std::optional<int64_t>(50),
                                             std::optional<int64_t>(1017), std::optional<int64_t>(2048),
                                             std::optional<int64_t>(2561), std::optional<int64_t>(4096),
                                             std::optional<int64_t>(5999)}) {
        const std::string label = cut ? "blow-up at step " + std::to_string(*cut) : "no blow-up";
        ScanContext inPlace(inputs, config);
        inPlace.blowupOnsetStep = cut;
        ASSERT_TRUE(detectVanishing(inPlace));
        const std::string expected = findings(inPlace);
        if (!cut)
            EXPECT_EQ(inPlace.report.incidents.size(), 3u) << expected;

        ScanContext late(inputs, config);
        startVanishingStream(late);
        waitForVanishingStream(late); // the stream has passed every cut before it learns it
        late.blowupOnsetStep = cut;
        ASSERT_TRUE(detectVanishing(late));
        EXPECT_EQ(findings(late), expected) << label << ", limit after the stream";

        ScanContext early(inputs, config);
        startVanishingStream(early);
        early.blowupOnsetStep = cut;
        ASSERT_TRUE(detectVanishing(early));
        EXPECT_EQ(findings(early), expected) << label << ", limit while it streams";
    }
}

TEST(BadInputRule, ASaturatedBatchIsNamedWithItsFillValue)
{
    NoisyRun run(300);
    ScanInputs inputs = run.inputs();
    inputs.addTable("inputs", {"x"}, run.steps,
                    {{"max", table(300, 1, [](int64_t step, size_t) { return step == 120 ? 32767.f : 3.f; })},
                     {"min", table(300, 1, [](int64_t, size_t) { return -3.f; })},
                     {"nan", table(300, 1, [](int64_t, size_t) { return 0.f; })}});
    ScanContext context(inputs, ScanConfig{});
    const auto input = onlyIncident(context, detectBadInputs);
    ASSERT_TRUE(input);
    expectIncident(*input, IncidentKind::BadInput, Severity::Warning, 120);
    EXPECT_EQ(input->layers, std::vector<std::string>{"x"});
    EXPECT_NE(input->evidence.note.find("fill or saturation value 32767"), std::string::npos) << input->evidence.note;
    EXPECT_EQ(context.badInputs.size(), 1u) << "for the rules after it";
}

// Issue 17: damaged bytes read as a parameter norm of -3e38 were taken for training behaviour.
TEST(ScanRules, NegativeNormsAreReportedAsDamageToTheFile)
{
    const NoisyRun run(300);
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"a.weight", "b.weight"}, run.steps,
                    {{"grad_norm", table(300, 2, [](int64_t, size_t) { return 1.0f; })},
                     {"param_norm", table(300, 2, [](int64_t step, size_t c) {
                          return c == 1 && step >= 180 && step < 184 ? -3e38f : 10.0f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    const auto incident = onlyIncident(context, detectDamagedValues);
    ASSERT_TRUE(incident);
    expectIncident(*incident, IncidentKind::DamagedData, Severity::Critical, 180);
    EXPECT_EQ(incident->evidence.windowEndStep, 183);
    EXPECT_EQ(incident->evidence.count, 4);
    EXPECT_NE(incident->cause.find("layers/param_norm"), std::string::npos) << incident->cause;
    EXPECT_NE(incident->cause.find("damaged"), std::string::npos) << incident->cause;
}

TEST(ScanRules, AHealthyRunHasNoDamagedValues)
{
    const NoisyRun run(300);
    ScanInputs inputs = run.inputs({{"lr", std::vector<double>(300, 0.01)}});
    inputs.addTable("layers", {"a.weight"}, run.steps,
                    {{"grad_norm", table(300, 1, [](int64_t, size_t) { return 0.5f; })},
                     {"param_norm", table(300, 1, [](int64_t, size_t) { return 3.0f; })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectDamagedValues(context));
    EXPECT_TRUE(context.report.incidents.empty());
}

// Issue 26: kinds and texts that say what happened.

TEST(BlowupRule, AGradientNormNaNBesideAFiniteLossIsANonfiniteGradientNotANaNLoss)
{
    NoisyRun run(400);
    const ScanInputs inputs = skippedNonfiniteAt(run, 180, /*lossToo=*/false);
    ScanContext context(inputs, ScanConfig{});
    const auto burst = onlyIncident(context, detectNonfiniteAndBlowup);
    ASSERT_TRUE(burst);
    expectIncident(*burst, IncidentKind::NonfiniteGradient, Severity::Info, 180);
    EXPECT_STREQ(toString(burst->kind), "nonfinite_gradient");
}

TEST(BlowupRule, ABurstWhereTheLogEndsIsNotCalledRecovered)
{
    NoisyRun run(200);
    const ScanInputs inputs = skippedNonfiniteAt(run, 199, /*lossToo=*/true);
    ScanContext context(inputs, ScanConfig{});
    const auto burst = onlyIncident(context, detectNonfiniteAndBlowup);
    ASSERT_TRUE(burst);
    EXPECT_EQ(burst->kind, IncidentKind::NonfiniteLoss);
    EXPECT_EQ(burst->cause.find("recovered"), std::string::npos) << burst->cause;
    EXPECT_NE(burst->cause.find("where the log ends"), std::string::npos) << burst->cause;
}

TEST(BlowupRule, NaNWrittenByTheFirstUpdateIsBornInTheParametersAndBatchNormPointsToIt)
{
    NoisyRun run(100);
    for (size_t r = 1; r < run.loss.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"fc1.weight", "fc2.weight"}, run.steps,
                    {{"grad_norm", table(100, 2, [](int64_t step, size_t) { return step >= 1 ? NAN : 0.3f; })},
                     {"param_norm", table(100, 2, [](int64_t step, size_t c) {
                          return step >= 1 && c == 1 ? NAN : 2.f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    Incident bn; // what the BatchNorm rule found before: the statistics NaN from step 1
    bn.kind = IncidentKind::BnCorruption;
    bn.severity = Severity::Critical;
    bn.onsetStep = 1;
    bn.cause = "Running statistics of bn became non-finite (NaN/Inf) at step 1.";
    context.report.incidents.push_back(bn);
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    ASSERT_EQ(context.report.incidents.size(), 2u);
    const Incident& blowup = context.report.incidents[1];
    EXPECT_EQ(blowup.kind, IncidentKind::Blowup);
    EXPECT_NE(blowup.cause.find("NaN born in the optimizer update of step 0"), std::string::npos) << blowup.cause;
    EXPECT_NE(blowup.cause.find("fc2.weight"), std::string::npos) << blowup.cause;
    EXPECT_EQ(blowup.cause.find("dirty data"), std::string::npos) << blowup.cause;
    const Incident& consequence = context.report.incidents[0];
    EXPECT_EQ(consequence.severity, Severity::Warning) << "the root, not its consequence, comes first";
    EXPECT_NE(consequence.cause.find("A consequence"), std::string::npos) << consequence.cause;
}

TEST(NonfiniteMetricRule, AMetricNaNWhileTrainingIsFiniteIsNamedWithItsSteps)
{
    NoisyRun run(300);
    std::vector<double> accuracy(300, 0.8), auc(300, NAN);
    for (size_t r = 100; r < 104; ++r)
        accuracy[r] = NAN;
    run.loss[250] = NAN; // a NaN training step explains the metrics' NaN there
    accuracy[250] = NAN;
    const ScanInputs inputs = run.inputs({{"accuracy", accuracy}, {"auc", auc}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteMetrics(context));
    ASSERT_EQ(context.report.incidents.size(), 2u);
    for (const Incident& incident : context.report.incidents) {
        EXPECT_EQ(incident.kind, IncidentKind::NonfiniteMetric);
        EXPECT_EQ(incident.severity, Severity::Info);
    }
    const Incident& acc = context.report.incidents[0].evidence.series == "scalars/accuracy" ? context.report.incidents[0]
                                                                                            : context.report.incidents[1];
    EXPECT_EQ(acc.onsetStep, 100);
    EXPECT_EQ(acc.evidence.count, 4);
    EXPECT_NE(acc.cause.find("'accuracy'"), std::string::npos) << acc.cause;
    EXPECT_NE(acc.cause.find("from step 100 to 103"), std::string::npos) << acc.cause;
    const Incident& every = &acc == &context.report.incidents[0] ? context.report.incidents[1] : context.report.incidents[0];
    EXPECT_NE(every.cause.find("every one of its"), std::string::npos) << every.cause;
}

TEST(SpikeRule, AJumpOfAHundredFoldInTheWarmupIsReportedAndAnOrdinaryOneIsNot)
{
    NoisyRun run(80, 0.6, 0.05);
    run.gradNorm[22] *= 115;
    run.gradNorm[30] *= 8; // warm-up turbulence
    const ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    const auto spike = onlyIncident(context, detectSpikes);
    ASSERT_TRUE(spike);
    expectIncident(*spike, IncidentKind::Spike, Severity::Warning, 22);
}

// clip_grad_norm_(1.0) and a learning rate that keeps rising: the logged (pre-clip) norm climbs
// x2.2 over 400 steps, the loss x5.5 and the parameter norm x8.7, and the gradients go NaN. A
// divergence, not one batch: read on the loss and the parameter norm.
TEST(BlowupRule, ADivergenceUnderGradientClippingIsGradualReadOnTheLossAndParameterNorm)
{
    const int64_t n = 700;
    NoisyRun run(n, 1.0, 0.03);
    std::vector<double> paramNorm(size_t(n), 10.0);
    for (int64_t r = 0; r < n; ++r) {
        const double climb = r < 250 ? 0.0 : double(r - 250) / 400.0; // 0 .. 1 over rows 250..650
        run.loss[size_t(r)] = 0.8 * std::pow(5.5, std::min(climb, 1.0)) * (1 + 0.02 * std::sin(double(r)));
        run.gradNorm[size_t(r)] = 0.5 * std::pow(2.2, std::min(climb, 1.0)) * (1 + 0.05 * std::sin(3.0 * double(r)));
        paramNorm[size_t(r)] = 10.0 * std::pow(8.7, std::min(climb, 1.0));
    }
    for (size_t r = 650; r < size_t(n); ++r)
        run.loss[r] = run.gradNorm[r] = paramNorm[r] = NAN;
    const ScanInputs inputs = run.inputs({{"param_norm", paramNorm}});
    ScanContext context(inputs, ScanConfig{});
    const auto blowup = onlyIncident(context, detectNonfiniteAndBlowup);
    ASSERT_TRUE(blowup);
    ASSERT_TRUE(blowup->pattern);
    EXPECT_EQ(*blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_LT(blowup->onsetStep, 400) << "where the climb began, not at the NaN";
    EXPECT_EQ(blowup->cause.find("stable baseline"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("the loss rose x"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("parameter norm x"), std::string::npos) << blowup->cause;
    // The growth is the loss's, measured there (issue 51: the trend was drawn on the gradient-norm
    // plot with the loss's slope, above almost every point): the fitted line passes through the
    // loss where the climb began and where it ended.
    EXPECT_EQ(blowup->evidence.series, "scalars/loss");
    ASSERT_TRUE(blowup->evidence.baseline && blowup->evidence.growthDecadesPerStep);
    auto trendAt = [&](double step) {
        return *blowup->evidence.baseline *
               std::pow(10.0, *blowup->evidence.growthDecadesPerStep * (step - double(blowup->onsetStep)));
    };
    for (int64_t step : {blowup->onsetStep + 10, int64_t(640)}) {
        const double ratio = trendAt(double(step)) / run.loss[size_t(step)];
        EXPECT_GT(ratio, 0.7) << "at step " << step;
        EXPECT_LT(ratio, 1.4) << "at step " << step;
    }
}
