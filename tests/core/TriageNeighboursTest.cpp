// Which neighbouring batches triage replays on the incident's checkpoint
// (core/replay/TriageNeighbours): the nearest healthy ones, two each side, and the incidents met on
// the way, marked.
#include "core/replay/TriageNeighbours.h"

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
std::vector<int64_t> stepsOf(const std::vector<NeighbourBatch>& neighbours)
{
    std::vector<int64_t> steps;
    for (const auto& n : neighbours)
        steps.push_back(n.step);
    return steps;
}
} // namespace

TEST(TriageNeighbours, TwoHealthyBatchesEachSideAndTheIncidentsOnTheWayMarked)
{
    const std::vector<int64_t> saved{10, 20, 30, 40, 50, 60, 70};
    const auto neighbours = triageNeighbours(saved, 40, {30});
    EXPECT_EQ(stepsOf(neighbours), (std::vector<int64_t>{10, 20, 30, 50, 60}));
    for (const auto& n : neighbours)
        EXPECT_EQ(n.wasIncident, n.step == 30) << n.step;
}

TEST(TriageNeighbours, AStepWithoutABatchOfItsOwnStillHasNeighbours)
{
    const auto neighbours = triageNeighbours({10, 20, 60}, 40, {});
    EXPECT_EQ(stepsOf(neighbours), (std::vector<int64_t>{10, 20, 60}));
    EXPECT_TRUE(triageNeighbours({40}, 40, {}).empty()) << "no other saved batch";
}
