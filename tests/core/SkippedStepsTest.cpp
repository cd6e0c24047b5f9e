// Which steps the training skipped is read one way by the scan, the window and triage
// (core/run/SkippedSteps.h): each had its own threshold and event test before.
#include "core/run/SkippedSteps.h"

#include <gtest/gtest.h>

#include <limits>

using namespace nanscope;
namespace rf = nanscope::runformat;

TEST(SkippedSteps, ALoggedRowIsSkippedAboveOneHalf)
{
    EXPECT_TRUE(rf::isSkippedValue(1.0));
    EXPECT_TRUE(rf::isSkippedValue(0.75)) << "a mean over logged steps: most were skipped";
    EXPECT_FALSE(rf::isSkippedValue(0.5));
    EXPECT_FALSE(rf::isSkippedValue(0.0));
    EXPECT_FALSE(rf::isSkippedValue(std::numeric_limits<double>::quiet_NaN())) << "an unlogged value is no skip";
}

TEST(SkippedSteps, EveryStepOfASkippedStepEventCountsLoggedRowOrNot)
{
    const std::vector<std::string> kinds{ rf::event::kLossScaleDecrease, rf::event::kSkippedStep, rf::event::kNote,
                                          rf::event::kSkippedStep };
    const std::vector<int64_t> steps{ 3, 3, 7, 11 };
    EXPECT_EQ(rf::skippedStepsOfEvents(kinds, steps), (std::vector<int64_t>{ 3, 11 }));
    EXPECT_TRUE(rf::skippedStepsOfEvents(kinds, { 3 }).empty()) << "a kind without its step is not read";
}
