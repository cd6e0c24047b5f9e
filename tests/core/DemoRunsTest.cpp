// The demo runs are both the demo and the fixtures of later tests, so each must really show the
// failure it is named after. They are written by the `make_demo_runs` CTest fixture.
#include "TestRuns.h"

#include "core/torch/DemoRuns.h"
#include "core/run/RunReader.h"

#include <cmath>
#include <numeric>

using namespace nanscope;

namespace {

std::unique_ptr<RunReader> openDemo(const std::string& name)
{
    auto reader = RunReader::open(test::demoRun(name));
    EXPECT_TRUE(reader) << reader.error();
    return reader ? std::move(*reader) : nullptr;
}

int64_t firstNonfiniteStep(const RunReader& reader, const char* scalar)
{
    auto values = reader.readSeries("scalars", scalar);
    const auto& steps = reader.steps("scalars");
    for (size_t i = 0; i < values->size(); ++i)
        if (!std::isfinite((*values)[i]))
            return steps[i];
    return -1;
}

} // namespace

TEST(DemoRuns, HealthyRunStaysFiniteAndLearns)
{
    auto reader = openDemo("healthy");
    ASSERT_TRUE(reader);
    EXPECT_EQ(firstNonfiniteStep(*reader, "loss"), -1);
    EXPECT_EQ(firstNonfiniteStep(*reader, "eval_loss"), -1);
    auto eval = reader->readSeries("scalars", "eval_loss");
    EXPECT_LT(eval->back(), 0.8 * eval->front()) << "the healthy model must actually learn";
    for (const char* table : {"scalars", "layers", "activations", "buffers", "inputs", "events"})
        EXPECT_NE(reader->table(table), nullptr) << table;
    EXPECT_GE(reader->info().checkpoints.size(), 5u);
}

TEST(DemoRuns, SuddenBlowupJumpsAtTheCorruptedBatch)
{
    auto reader = openDemo("sudden-blowup");
    ASSERT_TRUE(reader);
    auto grad = reader->readSeries("scalars", "grad_norm");
    const auto& steps = reader->steps("scalars");
    const size_t corrupted = size_t(std::find(steps.begin(), steps.end(), 230) - steps.begin());
    ASSERT_LT(corrupted, steps.size());
    EXPECT_GT((*grad)[corrupted], 1e4 * (*grad)[corrupted - 1]) << "a jump of orders of magnitude in one step";
    EXPECT_GT(firstNonfiniteStep(*reader, "loss"), 230);
    auto inputMax = reader->readColumn("inputs", "max", 0);
    EXPECT_GE((*inputMax)[corrupted], 999999999.f * 0.99f) << "/inputs records the fill value";
    EXPECT_TRUE(reader->info().checkpoints.count(230));
    EXPECT_TRUE(reader->info().batches.count(230));
}

TEST(DemoRuns, GradualBlowupGrowsForTensOfStepsBeforeFailing)
{
    auto reader = openDemo("gradual-blowup");
    ASSERT_TRUE(reader);
    const int64_t failure = firstNonfiniteStep(*reader, "grad_norm");
    ASSERT_GT(failure, 100);
    auto grad = reader->readSeries("scalars", "grad_norm");
    auto lr = reader->readSeries("scalars", "lr");
    const auto& steps = reader->steps("scalars");
    const size_t end = size_t(std::find(steps.begin(), steps.end(), failure) - steps.begin());
    // No single step jumps by 10^4, but the norm grows by more than 100x over the run-up.
    double largestJump = 0;
    for (size_t i = end - 40; i + 2 < end; ++i)
        largestJump = std::max(largestJump, (*grad)[i + 1] / (*grad)[i]);
    EXPECT_LT(largestJump, 1e4);
    EXPECT_GT((*grad)[end - 1], 100 * (*grad)[end - 60]);
    EXPECT_GT((*lr)[end], 5 * (*lr)[0]) << "the learning rate ramps";
}

TEST(DemoRuns, DivisionByZeroSkipsOneStepAndRecovers)
{
    auto reader = openDemo("division-by-zero");
    ASSERT_TRUE(reader);
    EXPECT_EQ(firstNonfiniteStep(*reader, "loss"), 180);
    auto skipped = reader->readSeries("scalars", "skipped");
    auto loss = reader->readSeries("scalars", "loss");
    EXPECT_EQ((*skipped)[180], 1.0);
    EXPECT_DOUBLE_EQ(std::accumulate(skipped->begin(), skipped->end(), 0.0), 1.0);
    EXPECT_TRUE(std::isfinite(loss->back())) << "training recovers after the skipped step";
    EXPECT_TRUE(reader->info().checkpoints.count(180));
    EXPECT_TRUE(reader->info().batches.count(180));
    auto kinds = reader->table("activations")->kinds;
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), "FeatureNorm"), kinds.end());
}

TEST(DemoRuns, PoisonedBatchNormBreaksEvaluationWhileTrainingLooksFine)
{
    auto reader = openDemo("batchnorm-poisoned");
    ASSERT_TRUE(reader);
    EXPECT_EQ(firstNonfiniteStep(*reader, "loss"), 200);
    auto loss = reader->readSeries("scalars", "loss");
    auto eval = reader->readSeries("scalars", "eval_loss");
    EXPECT_TRUE(std::isfinite(loss->back()));
    EXPECT_TRUE(std::isnan(eval->back())) << "evaluation uses the poisoned running statistics";
    auto nonfinite = reader->readColumn("buffers", "nonfinite", 0);
    const auto& bufferSteps = reader->steps("buffers");
    for (size_t i = 0; i < bufferSteps.size(); ++i)
        ASSERT_EQ((*nonfinite)[i] > 0, bufferSteps[i] >= 200) << "step " << bufferSteps[i];
    auto inputNan = reader->readColumn("inputs", "nan", 0);
    EXPECT_EQ((*inputNan)[200], 1.f);
}

TEST(DemoRuns, CutShortRunIsStillAValidRun)
{
    test::ScratchDir dir;
    DemoScenario scenario = demoScenarios()[0];
    scenario.cutShortAtStep = 37;
    ASSERT_TRUE(writeDemoRun(dir.path(), scenario));
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_EQ((*reader)->table("scalars")->rows, 37);
}

TEST(DemoRuns, CancellingStopsTheRun)
{
    test::ScratchDir dir;
    int calls = 0;
    Status status = writeDemoRun(dir.path(), demoScenarios()[0], [&](double, const std::string&) { return ++calls < 5; });
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error(), "cancelled");
    EXPECT_EQ(calls, 5);
}
