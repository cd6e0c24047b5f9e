// Which checkpoint shows an incident (core/scan/IncidentCheckpoint): damage an onset step wrote
// into the state is first in the checkpoint after it; anything else on the one at or before.
#include "core/scan/IncidentCheckpoint.h"

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
Incident incidentOf(IncidentKind kind, int64_t onset)
{
    Incident incident;
    incident.kind = kind;
    incident.onsetStep = onset;
    return incident;
}
} // namespace

TEST(IncidentCheckpoint, PoisonedBuffersAreShownInTheFirstCheckpointAfterTheirStep)
{
    const std::vector<int64_t> saved{0, 50, 60, 100};
    const auto bn = checkpointShowingIncident(incidentOf(IncidentKind::BnCorruption, 50), saved);
    ASSERT_TRUE(bn);
    EXPECT_EQ(bn->step, 60) << "checkpoint 50 is the state step 50's forward ran on, before the damage";
    EXPECT_NE(bn->why.find("after step 50"), std::string::npos) << bn->why;
    EXPECT_NE(bn->why.find("checkpoint 50 holds the state before it"), std::string::npos) << bn->why;

    const auto last = checkpointShowingIncident(incidentOf(IncidentKind::BnCorruption, 100), saved);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->step, 100) << "none after: the nearest, said so";
    EXPECT_NE(last->why.find("no checkpoint was saved after step 100"), std::string::npos) << last->why;
}

TEST(IncidentCheckpoint, OtherIncidentsAreShownOnTheStateTheirStepRanOn)
{
    const std::vector<int64_t> saved{0, 50, 60, 100};
    const auto blowup = checkpointShowingIncident(incidentOf(IncidentKind::Blowup, 55), saved);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->step, 50);
    EXPECT_TRUE(blowup->why.empty());
    const auto early = checkpointShowingIncident(incidentOf(IncidentKind::Spike, 3), {10, 20});
    ASSERT_TRUE(early);
    EXPECT_EQ(early->step, 10);
    EXPECT_FALSE(checkpointShowingIncident(incidentOf(IncidentKind::Spike, 3), {}));
}
