// The divergence rule on its own, on loss series held in memory: a finite loss that climbs away from
// its best level and stays up is a gradual blow-up from where the climb began; noise, a jump to a
// new level, a blow-up the other rule found and a loss with no scale to climb on are not.
#include "core/scan/ScanContext.h"
#include "core/scan/ScanInputs.h"
#include "core/scan/ScanRules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// A loss that falls from 2.1 to its floor of 0.1, with noiseDecades of spread between rows, and
// from `climbFrom` on rises by climbDecades over climbSteps steps (then holds); a learning rate
// that, with lrRisesWithIt, grows with it.
struct LossRun
{
    LossRun(int64_t count, int64_t climbFrom, double climbDecades, int64_t climbSteps, double noiseDecades = 0.1,
            uint32_t seed = 3, bool lrRisesWithIt = false)
    {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 1.0);
        for (int64_t step = 0; step < count; ++step) {
            steps.push_back(step);
            double level = 2.0 * std::exp(-double(step) / 60.0) + 0.1;
            double climbed = 0;
            if (climbFrom >= 0 && step >= climbFrom)
                climbed = climbDecades * std::min(1.0, double(step - climbFrom) / double(climbSteps));
            loss.push_back(level * std::pow(10.0, climbed + noiseDecades * noise(rng)));
            gradNorm.push_back(std::pow(10.0, 0.1 * noise(rng)));
            lr.push_back(lrRisesWithIt && climbFrom >= 0 && step >= climbFrom ? 1e-3 * std::pow(1.01, double(step - climbFrom))
                                                                              : 1e-3);
        }
    }

    ScanInputs inputs() const { return ScanInputs::fromMemory(steps, {{"loss", loss}, {"grad_norm", gradNorm}, {"lr", lr}}); }

    std::vector<int64_t> steps;
    std::vector<double> loss, gradNorm, lr;
};

std::vector<Incident> divergences(const ScanInputs& inputs, const ScanConfig& config = {},
                                  std::optional<size_t> blowupOnsetRow = std::nullopt)
{
    ScanContext context(inputs, config);
    context.blowupOnsetRow = blowupOnsetRow;
    const Status status = detectDivergence(context);
    EXPECT_TRUE(status) << status.error();
    return context.report.incidents;
}

} // namespace

TEST(DivergenceRule, ALossThatClimbsAndStaysUpIsAGradualBlowupFromWhereTheClimbBegan)
{
    const LossRun run(500, 250, 0.9, 150, 0.1, 3, true); // x8 over 150 steps, as its learning rate grows
    const ScanInputs inputs = run.inputs();
    const auto found = divergences(inputs);
    ASSERT_EQ(found.size(), 1u);
    const Incident& incident = found.front();
    EXPECT_EQ(incident.kind, IncidentKind::Blowup);
    ASSERT_TRUE(incident.pattern);
    EXPECT_EQ(*incident.pattern, BlowupPattern::Gradual);
    EXPECT_EQ(incident.severity, Severity::Warning) << "below an order of magnitude";
    EXPECT_FALSE(incident.nonfiniteStep);
    EXPECT_GE(incident.onsetStep, 225);
    EXPECT_LE(incident.onsetStep, 290);
    ASSERT_TRUE(incident.evidence.jumpRatio);
    EXPECT_GT(*incident.evidence.jumpRatio, 4.0);
    EXPECT_LT(*incident.evidence.jumpRatio, 16.0);
    EXPECT_EQ(incident.evidence.series, "scalars/loss");
    EXPECT_NE(incident.cause.find("diverged without NaN"), std::string::npos) << incident.cause;
    EXPECT_NE(incident.cause.find("learning rate rose"), std::string::npos) << incident.cause;
    EXPECT_NE(incident.suggestion.find("Lower the learning rate"), std::string::npos) << incident.suggestion;
}

TEST(DivergenceRule, AClimbOfAnOrderOfMagnitudeOrMoreIsCritical)
{
    const LossRun run(500, 250, 1.5, 150);
    const ScanInputs inputs = run.inputs();
    const auto found = divergences(inputs);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front().severity, Severity::Critical);
    EXPECT_NE(found.front().cause.find("data that changed"), std::string::npos)
        << "no learning-rate rise to blame: " << found.front().cause;
}

TEST(DivergenceRule, NoisyTrainingThatNeverClimbsIsNotADivergence)
{
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        const LossRun run(400, -1, 0, 1, 0.2, seed);
        const ScanInputs inputs = run.inputs();
        EXPECT_TRUE(divergences(inputs).empty()) << "seed " << seed;
    }
}

TEST(DivergenceRule, AJumpToANewLevelIsLeftToTheSpikeAndBlowupRules)
{
    const LossRun run(500, 250, 1.0, 1); // x10 in one step, held
    const ScanInputs inputs = run.inputs();
    EXPECT_TRUE(divergences(inputs).empty());
}

TEST(DivergenceRule, AClimbThatCameBackDownIsNotADivergence)
{
    LossRun run(500, 250, 0.9, 100);
    for (size_t row = 380; row < run.loss.size(); ++row)
        run.loss[row] /= std::pow(10.0, 0.9); // back to its floor
    const ScanInputs inputs = run.inputs();
    EXPECT_TRUE(divergences(inputs).empty());
}

TEST(DivergenceRule, ABlowupFoundByItsOwnRuleExplainsTheClimb)
{
    const LossRun run(500, 250, 0.9, 150);
    const ScanInputs inputs = run.inputs();
    EXPECT_TRUE(divergences(inputs, {}, size_t(260)).empty());
}

TEST(DivergenceRule, ALossWithoutAScaleToClimbOnIsLeftAlone)
{
    LossRun run(500, 250, 0.9, 150);
    for (size_t row = 0; row < run.loss.size(); row += 4)
        run.loss[row] = -run.loss[row]; // a log-likelihood that crosses zero
    const ScanInputs inputs = run.inputs();
    EXPECT_TRUE(divergences(inputs).empty());
}

TEST(DivergenceRule, ARatioOfZeroSwitchesItOff)
{
    const LossRun run(500, 250, 1.5, 150);
    const ScanInputs inputs = run.inputs();
    ScanConfig config;
    config.divergenceRatio = 0;
    EXPECT_TRUE(divergences(inputs, config).empty());
}

TEST(DivergenceRule, NamesTheLayersThatRoseWithTheLoss)
{
    const LossRun run(500, 250, 0.9, 150);
    ScanInputs inputs = run.inputs();
    std::vector<float> gradNorms; // [step, layer]: a.weight flat, b.weight x100 over the climb
    for (int64_t step = 0; step < 500; ++step) {
        gradNorms.push_back(1.0f);
        gradNorms.push_back(step < 250 ? 1.0f : float(std::pow(10.0, 2.0 * std::min(1.0, double(step - 250) / 150.0))));
    }
    inputs.addTable("layers", {"a.weight", "b.weight"}, run.steps, {{"grad_norm", gradNorms}});
    const auto found = divergences(inputs);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.front().layers, std::vector<std::string>{"b.weight"});
}
