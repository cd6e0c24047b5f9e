// Which checkpoint goes with step N (core/run/CheckpointPairing): checkpoint N when it was saved
// (the weights step N's forward ran on), else the latest before it, which triage replays on and
// replay refuses; steps that replay reproduces have both files of the same step.
#include "core/run/CheckpointPairing.h"

#include <gtest/gtest.h>

using namespace nanscope;

TEST(CheckpointPairing, StepNGoesWithItsOwnCheckpointElseTheLatestBefore)
{
    const SteppedFiles checkpoints{{0, "c0"}, {100, "c100"}, {200, "c200"}};
    auto own = checkpointForStep(checkpoints, 100);
    ASSERT_TRUE(own);
    EXPECT_EQ(own->step, 100);
    EXPECT_TRUE(own->ownStep);
    EXPECT_EQ(own->earlierStep, 0);

    auto between = checkpointForStep(checkpoints, 157);
    ASSERT_TRUE(between);
    EXPECT_EQ(between->step, 100) << "the latest at or before 157, never the later 200";
    EXPECT_FALSE(between->ownStep);

    auto first = checkpointForStep(checkpoints, 0);
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->earlierStep) << "nothing was saved before the first checkpoint";

    EXPECT_FALSE(checkpointForStep(SteppedFiles{{10, "c10"}}, 9)) << "no checkpoint that early";
    EXPECT_FALSE(checkpointForStep(SteppedFiles{}, 5));
}

TEST(CheckpointPairing, ReplayableStepsHaveBothFilesOfTheSameStep)
{
    const SteppedFiles checkpoints{{0, "c0"}, {100, "c100"}};
    const SteppedFiles batches{{100, "b100"}, {157, "b157"}};
    EXPECT_TRUE(hasCheckpointAndBatch(checkpoints, batches, 100));
    EXPECT_FALSE(hasCheckpointAndBatch(checkpoints, batches, 157)) << "checkpoint 100 does not reproduce step 157";
    EXPECT_FALSE(hasCheckpointAndBatch(checkpoints, batches, 0)) << "no batch of step 0";
    EXPECT_EQ(stepsWithCheckpointAndBatch(checkpoints, batches), std::vector<int64_t>{100});
}
