// A gradual blow-up under a learning rate that climbed row after row up to the failure (issue 50):
// the climb of the step size is the departure the blow-up continues, so its onset is where the
// learning rate left its level, not where the gradient norm's noise happened to cross a line, nor
// where it finally showed the growth.
#include "core/scan/ScanRules.h"

#include "NoisyScanRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// 360 steps; the gradient norm around 1 with a burst of noise (x3) over steps 140-160, then
// growing x10 every 30 steps from `growthFrom` until NaN at 350; the learning rate `lrAt`.
struct GrowthUnderSchedule
{
    GrowthUnderSchedule(int64_t growthFrom, const std::function<double(int64_t)>& lrAt)
        : run(360, [](int64_t) { return 0.5; }, 0.03, 0.08, 11)
    {
        std::vector<double> lr;
        for (int64_t step : run.steps) {
            const size_t r = size_t(step);
            lr.push_back(lrAt(step));
            if (step >= 140 && step < 160)
                run.gradNorm[r] *= 3.0;
            if (step >= growthFrom)
                run.gradNorm[r] *= std::pow(10.0, double(step - growthFrom) / 30.0);
            if (step >= 350)
                run.loss[r] = run.gradNorm[r] = NAN;
        }
        inputs = std::make_unique<ScanInputs>(
            ScanInputs::fromMemory(run.steps, {{"loss", run.loss}, {"grad_norm", run.gradNorm}, {"lr", lr}}));
        context = std::make_unique<ScanContext>(*inputs, ScanConfig{});
        EXPECT_TRUE(detectNonfiniteAndBlowup(*context));
    }
    const Incident* blowup() const
    {
        for (const auto& incident : context->report.incidents)
            if (incident.kind == IncidentKind::Blowup)
                return &incident;
        return nullptr;
    }
    test::NoisyScanRun run;
    // Adds a module output that climbs three decades from `from` (attention scores growing once
    // the steps are large) and scans again.
    void addClimbingScores(int64_t from)
    {
        inputs->addTable("activations", {"attn.scores"}, run.steps,
                         {{"max", run.table(1, [from](int64_t step, size_t) {
                               if (step >= 350)
                                   return float(NAN);
                               const double wobble = 1.0 + 0.01 * double(step % 7);
                               const double grown = step < from ? 0.0 : 3.0 * double(step - from) / double(350 - from);
                               return float(0.2 * wobble * std::pow(10.0, grown));
                           })}});
        context = std::make_unique<ScanContext>(*inputs, ScanConfig{});
        EXPECT_TRUE(detectNonfiniteAndBlowup(*context));
    }
    std::unique_ptr<ScanInputs> inputs;
    std::unique_ptr<ScanContext> context;
};

double cosineThenClimb(int64_t step)
{
    const double decayed = 1e-3 * (0.55 + 0.45 * std::cos(3.14159 * double(std::min<int64_t>(step, 200)) / 400.0));
    return step < 200 ? decayed : decayed * std::pow(1.04, double(step - 200));
}

} // namespace

// A cosine decay turned into a climb of x1.04 a step at 200 (a schedule bug); the gradient norm
// shows the growth only from 270. The blow-up is gradual from 200, and its text names the rate.
TEST(LearningRateClimb, AGradualBlowupBeginsWhereTheRateLeftItsLevel)
{
    GrowthUnderSchedule scan(270, cosineThenClimb);
    const Incident* blowup = scan.blowup();
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 198) << blowup->cause;
    EXPECT_LE(blowup->onsetStep, 202) << blowup->cause;
    EXPECT_NE(blowup->cause.find("driven by the learning rate"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->suggestion.find("before step " + std::to_string(blowup->onsetStep)), std::string::npos);
}

// A warm-up that never ended climbs from the first step: it has no level to leave, and the onset
// is the gradient norm's own, not step 0.
TEST(LearningRateClimb, AWarmupFromTheFirstStepIsNoDepartureFromALevel)
{
    GrowthUnderSchedule scan(270, [](int64_t step) { return 1e-5 * double(step + 1); });
    const Incident* blowup = scan.blowup();
    ASSERT_TRUE(blowup);
    EXPECT_GE(blowup->onsetStep, 200) << blowup->cause;
}

// The gradient norm had grown x10 by the time the rate began to climb (at 250, from 210 on): it
// grew of its own accord first, and its onset stands.
TEST(LearningRateClimb, AGrowthThatBeganBeforeTheRateClimbedKeepsItsOwnOnset)
{
    GrowthUnderSchedule scan(210, [](int64_t step) { return step < 250 ? 1e-3 : 1e-3 * std::pow(1.04, double(step - 250)); });
    const Incident* blowup = scan.blowup();
    ASSERT_TRUE(blowup);
    EXPECT_LT(blowup->onsetStep, 240) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 170) << blowup->cause;
}

// Attention scores that grew three decades from 280, under a learning rate climbing from 200: the
// climb of the rate came first, the scores are where it showed. Gradual from 200, the rate's text
// naming the scores, the scores the first layer.
TEST(LearningRateClimb, APrecursorThatBeganAfterTheRateClimbedIsWhereTheClimbShowed)
{
    GrowthUnderSchedule scan(330, cosineThenClimb);
    scan.addClimbingScores(280);
    const Incident* blowup = scan.blowup();
    ASSERT_TRUE(blowup);
    EXPECT_GE(blowup->onsetStep, 198) << blowup->cause;
    EXPECT_LE(blowup->onsetStep, 202) << blowup->cause;
    EXPECT_NE(blowup->cause.find("driven by the learning rate"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("it showed first in the output of attn.scores"), std::string::npos) << blowup->cause;
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "attn.scores");
}

// The same scores growing from 120, before the rate left its level at 200: they grew first, and the
// blow-up began in them.
TEST(LearningRateClimb, APrecursorThatBeganBeforeTheRateClimbedKeepsItsOnset)
{
    GrowthUnderSchedule scan(330, cosineThenClimb);
    scan.addClimbingScores(120);
    const Incident* blowup = scan.blowup();
    ASSERT_TRUE(blowup);
    EXPECT_LT(blowup->onsetStep, 190) << blowup->cause;
    EXPECT_NE(blowup->cause.find("began in the output of attn.scores"), std::string::npos) << blowup->cause;
}
