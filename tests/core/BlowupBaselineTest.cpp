// What "blown up" means for a finite replay (core/replay/BlowupBaseline): the medians before the
// step, and 10x them. Triage and the sample bisection both judge by it.
#include "core/replay/BlowupBaseline.h"
#include "core/replay/Triage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

TEST(BlowupBaseline, TheTypicalValuesAreTheMediansOfTheFiniteRowsBeforeTheStep)
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> steps{0, 1, 2, 3, 4, 5};
    const std::vector<double> losses{2.0, 1.0, nan, 3.0, 500.0, 9.0};
    const std::vector<double> norms{0.5, 0.7, 0.6, nan, 80.0, 1.0};
    const BlowupBaseline baseline = blowupBaselineBefore(steps, losses, norms, 4);
    ASSERT_TRUE(baseline.loss && baseline.gradNorm);
    EXPECT_DOUBLE_EQ(*baseline.loss, 2.0) << "median of 2, 1, 3: the NaN and the step itself left out";
    EXPECT_DOUBLE_EQ(*baseline.gradNorm, 0.6);
    EXPECT_TRUE(lossBlewUp(500.0, baseline));
    EXPECT_FALSE(lossBlewUp(19.0, baseline));
    EXPECT_TRUE(lossBlewUp(-21.0, baseline)) << "a loss can be negative; its size counts";
    EXPECT_FALSE(lossBlewUp(nan, baseline)) << "non-finite is judged apart, not as a blow-up";
    EXPECT_TRUE(gradNormBlewUp(80.0, baseline));
    EXPECT_FALSE(gradNormBlewUp(5.0, baseline));
    EXPECT_EQ(badSampleCriterionText(baseline),
              "a non-finite value, a loss over 10x the run's typical (2) or a gradient norm over 10x the run's typical (0.6)");
}

TEST(BlowupBaseline, WithoutHistoryNothingFiniteBlowsUp)
{
    const BlowupBaseline none = blowupBaselineBefore({5, 6}, {1.0, 2.0}, {}, 5);
    EXPECT_FALSE(none.loss);
    EXPECT_FALSE(none.gradNorm);
    EXPECT_FALSE(lossBlewUp(1e30, none));
    EXPECT_EQ(badSampleCriterionText(none), "a non-finite value");
}

TEST(BlowupBaseline, TriageJudgesAReplayByTheSameRule)
{
    TriageReplay replay;
    replay.ran = true;
    replay.loss = 25.0;
    EXPECT_TRUE(triageReplayBlewUp(replay, 2.0));
    EXPECT_EQ(triageReplayBlewUp(replay, 2.0), lossBlewUp(25.0, BlowupBaseline{2.0, std::nullopt}));
    replay.loss = 15.0;
    EXPECT_FALSE(triageReplayBlewUp(replay, 2.0));
}
