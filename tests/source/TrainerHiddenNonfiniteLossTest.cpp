// transformers' Trainer logs 0.0 for a NaN or Inf loss (logging_nan_inf_filter): measured with
// transformers 5.23, a GPT-2 whose step-11 batch has every label -100 (0/0 in the loss), logging
// every step. tests/python/test_hf_callback.py records the same run with the callback.
#include "core/importers/TrainerStateReader.h"
#include "core/run/RunFormat.h"

#include "SourceTestSupport.h"

#include <cmath>

using namespace nanscope;
using namespace nanscope::testing;

namespace {

// A trainer_state.json as the Trainer writes it: one log_history entry a step.
std::string trainerState(const std::vector<std::pair<double, double>>& lossAndGradNorm, int loggingSteps)
{
    std::string text = "{\n  \"global_step\": " + std::to_string(lossAndGradNorm.size()) +
                       ",\n  \"logging_steps\": " + std::to_string(loggingSteps) + ",\n  \"log_history\": [\n";
    // Python's json writes NaN as NaN.
    const auto number = [](double value) {
        char digits[40];
        std::snprintf(digits, sizeof digits, "%.17g", value);
        return std::isnan(value) ? std::string("NaN") : std::string(digits);
    };
    for (size_t i = 0; i < lossAndGradNorm.size(); ++i)
        text += "    {\"epoch\": " + std::to_string(0.01 * double(i + 1)) + ", \"grad_norm\": " +
                number(lossAndGradNorm[i].second) + ", \"learning_rate\": 5e-05, \"loss\": " +
                number(lossAndGradNorm[i].first) + ", \"step\": " + std::to_string(i + 1) + "}" +
                (i + 1 < lossAndGradNorm.size() ? "," : "") + "\n";
    return text + "  ]\n}\n";
}

std::vector<std::pair<double, double>> stepsAround3_9(size_t count)
{
    std::vector<std::pair<double, double>> steps;
    for (size_t i = 0; i < count; ++i)
        steps.push_back({3.9 + 0.01 * double(i % 3), 1.4 - 0.01 * double(i % 4)});
    return steps;
}

} // namespace

TEST(TrainerHiddenNonfiniteLoss, AZeroLossAmongLossesNear4IsReadAsNonfiniteAndSaidSo)
{
    auto steps = stepsAround3_9(16);
    steps[10] = {0.0, 0.0}; // step 11: what transformers 5.23 logged for the all -100 batch
    ScratchFolder folder;
    Result<ScalarLog> log = readTrainerState(folder.write("trainer_state.json", trainerState(steps, 1)));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_TRUE(std::isnan(valueAt(*log, "loss", 11)));
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss", 10), 3.9);
    EXPECT_EQ(log->attributes.at(runformat::kLossLoggedAsZeroAttribute), "11");
    EXPECT_TRUE(anyContains(log->notes, "that 0.0 is not the loss"));
}

TEST(TrainerHiddenNonfiniteLoss, AZeroLossWithANanGradientNormIsHiddenToo)
{
    auto steps = stepsAround3_9(16);
    steps[4] = {0.0, std::nan("")};
    ScratchFolder folder;
    Result<ScalarLog> log = readTrainerState(folder.write("trainer_state.json", trainerState(steps, 1)));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_TRUE(std::isnan(valueAt(*log, "loss", 5)));
}

// The real log of 5hiri/Fine-Tuning-LLM-Test logs 0.0 at steps 50-58 with losses around 1e-4 and
// finite gradient norms: a loss that really reached zero.
TEST(TrainerHiddenNonfiniteLoss, ALossThatReachedZeroStaysZero)
{
    std::vector<std::pair<double, double>> steps;
    for (size_t i = 0; i < 16; ++i)
        steps.push_back({i % 2 ? 0.0 : 1e-4, 0.0009});
    ScratchFolder folder;
    Result<ScalarLog> log = readTrainerState(folder.write("trainer_state.json", trainerState(steps, 1)));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_EQ(valueAt(*log, "loss", 2), 0.0);
    EXPECT_EQ(log->attributes.count(runformat::kLossLoggedAsZeroAttribute), 0u);

    // A zero with a finite, non-zero gradient norm is a zero, whatever its neighbours.
    auto finite = stepsAround3_9(16);
    finite[7] = {0.0, 0.8};
    Result<ScalarLog> other = readTrainerState(folder.write("other.json", trainerState(finite, 1)));
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_EQ(valueAt(*other, "loss", 8), 0.0);
}

// With logging_steps > 1 the Trainer logs an interval's average, in which a NaN step was replaced by
// the average before it: no 0.0 stands for it.
TEST(TrainerHiddenNonfiniteLoss, AnIntervalAverageIsNotJudged)
{
    auto steps = stepsAround3_9(16);
    steps[10] = {0.0, 0.0};
    ScratchFolder folder;
    Result<ScalarLog> log = readTrainerState(folder.write("trainer_state.json", trainerState(steps, 10)));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_EQ(valueAt(*log, "loss", 11), 0.0);
}
