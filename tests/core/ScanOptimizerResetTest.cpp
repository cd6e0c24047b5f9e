// The optimizer's count of its updates (optimizer_step) starting again at 0 while the training goes
// on: its state was lost (a resume that loaded the weights alone). Runs in memory.
#include "core/scan/ScanRules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// Steps [first, first + count) every `every` steps; the loss at 0.5, or x4 for 20 steps after
// `lossJumpAt`; the optimizer's count of updates given by `countAt`.
struct CountedRun
{
    CountedRun(int64_t first, int64_t count, int64_t every, const std::function<double(int64_t)>& countAt,
               int64_t lossJumpAt = -1)
    {
        std::vector<int64_t> steps;
        std::vector<double> loss, gradNorm, optimizerStep;
        for (int64_t step = first; step < first + count; step += every) {
            steps.push_back(step);
            const bool jumped = lossJumpAt >= 0 && step >= lossJumpAt && step < lossJumpAt + 20;
            loss.push_back((jumped ? 2.0 : 0.5) * (1.0 + 0.01 * double(step % 5)));
            gradNorm.push_back(1.0 + 0.01 * double(step % 3));
            optimizerStep.push_back(countAt(step));
        }
        inputs = std::make_unique<ScanInputs>(ScanInputs::fromMemory(
            steps, {{"loss", loss}, {"grad_norm", gradNorm}, {"optimizer_step", optimizerStep}}));
        context = std::make_unique<ScanContext>(*inputs, ScanConfig{});
        EXPECT_TRUE(detectOptimizerReset(*context));
    }
    std::vector<const Incident*> resets() const
    {
        std::vector<const Incident*> found;
        for (const auto& incident : context->report.incidents)
            if (incident.kind == IncidentKind::OptimizerReset)
                found.push_back(&incident);
        return found;
    }
    std::unique_ptr<ScanInputs> inputs;
    std::unique_ptr<ScanContext> context;
};

} // namespace

// A fresh optimizer from step 200 (its count 0 there, 200 before), the loss x4 after it, logged
// every 5 steps: one warning at 200 that says what the count did and what the loss did.
TEST(OptimizerReset, ACountThatStartsAgainMidRunIsTheStateLost)
{
    CountedRun run(0, 400, 5, [](int64_t step) { return double(step < 200 ? step : step - 200); }, 200);
    const auto resets = run.resets();
    ASSERT_EQ(resets.size(), 1u);
    EXPECT_EQ(resets[0]->severity, Severity::Warning);
    EXPECT_EQ(resets[0]->onsetStep, 200);
    EXPECT_NE(resets[0]->cause.find("fell from 195 to 0"), std::string::npos) << resets[0]->cause;
    EXPECT_NE(resets[0]->cause.find("the loss rose x"), std::string::npos) << resets[0]->cause;
    EXPECT_NE(resets[0]->suggestion.find("optimizer.load_state_dict"), std::string::npos);
}

// A run that begins at step 500 (a resume) with the optimizer's count at 0: the state did not come
// with the weights. Resumed with its state, the count is 500 there: nothing.
TEST(OptimizerReset, ARunResumedWithAFreshOptimizerIsToldAtItsFirstStep)
{
    CountedRun fresh(500, 100, 1, [](int64_t step) { return double(step - 500); });
    ASSERT_EQ(fresh.resets().size(), 1u);
    EXPECT_EQ(fresh.resets()[0]->onsetStep, 500);
    EXPECT_NE(fresh.resets()[0]->cause.find("is 0 at this run's first logged step"), std::string::npos);
    CountedRun restored(500, 100, 1, [](int64_t step) { return double(step); });
    EXPECT_TRUE(restored.resets().empty());
}

// Counts that lag the step (AMP's skipped updates), a run of its own from step 0, and a rollback to
// a state saved 20 steps before (the count falls by 20, not to 0): no reset.
TEST(OptimizerReset, LaggingCountsAndARollbackAreNoReset)
{
    CountedRun lagging(0, 300, 1, [](int64_t step) { return double(step < 30 ? 0 : step - 30); });
    EXPECT_TRUE(lagging.resets().empty());
    CountedRun rolledBack(0, 300, 5, [](int64_t step) { return double(step < 150 ? step : step - 20); });
    EXPECT_TRUE(rolledBack.resets().empty());
}
