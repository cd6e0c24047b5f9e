// The triage's judgement: which replays blowing up mean data, state, data x state or not
// reproducible. Plain values in, a label out: no LibTorch, no replay.

#include "core/replay/Triage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TriageReplay finite(TriageRole role, int64_t checkpoint, int64_t batch, double loss = 0.7)
{
    TriageReplay r;
    r.role = role;
    r.checkpointStep = checkpoint;
    r.batchStep = batch;
    r.ran = true;
    r.loss = loss;
    return r;
}

TriageReplay nanAtDiv(TriageRole role, int64_t checkpoint, int64_t batch)
{
    TriageReplay r = finite(role, checkpoint, batch, kNan);
    r.forwardNonfinite = true;
    r.badOp = "aten::div";
    r.badModule = "norm";
    return r;
}

TriageReplay missing(TriageRole role, int64_t checkpoint, int64_t batch, const std::string& why)
{
    TriageReplay r;
    r.role = role;
    r.checkpointStep = checkpoint;
    r.batchStep = batch;
    r.error = why;
    return r;
}

TriageEvidence evidence(std::vector<TriageReplay> replays, std::optional<double> typicalLoss = 0.7)
{
    TriageEvidence e;
    e.step = 180;
    e.replays = std::move(replays);
    e.typicalLoss = typicalLoss;
    return e;
}

using R = TriageRole;

bool anyDetailHas(const TriageVerdict& verdict, const std::string& words)
{
    for (const std::string& detail : verdict.details)
        if (detail.find(words) != std::string::npos)
            return true;
    return false;
}

} // namespace

TEST(Triage, BatchThatBlowsUpOnAnEarlierStateAloneIsData)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 180, 180), nanAtDiv(R::IncidentAgain, 180, 180),
                                                  nanAtDiv(R::EarlierCheckpoint, 150, 180), finite(R::NeighbourBatch, 180, 150),
                                                  finite(R::NeighbourBatch, 180, 200)}));
    EXPECT_EQ(v.label, TriageLabel::Data);
    EXPECT_NE(v.why.find("batch alone"), std::string::npos) << v.why;
    EXPECT_TRUE(v.details.empty());
}

TEST(Triage, OtherBatchesBlowingUpOnTheStateIsState)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 231, 231), nanAtDiv(R::IncidentAgain, 231, 231),
                                                  finite(R::EarlierCheckpoint, 230, 231), nanAtDiv(R::NeighbourBatch, 231, 232),
                                                  finite(R::NeighbourBatch, 231, 200)}));
    EXPECT_EQ(v.label, TriageLabel::State);
    EXPECT_NE(v.why.find("232"), std::string::npos) << v.why;
}

TEST(Triage, EveryBatchOnEveryStateBlowingUpIsState)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 214, 214), nanAtDiv(R::IncidentAgain, 214, 214),
                                                  nanAtDiv(R::EarlierCheckpoint, 213, 214), nanAtDiv(R::NeighbourBatch, 214, 213)}));
    EXPECT_EQ(v.label, TriageLabel::State);
    EXPECT_NE(v.why.find("bad already"), std::string::npos) << v.why;
}

TEST(Triage, NeitherAloneIsDataTimesState)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 180, 180), nanAtDiv(R::IncidentAgain, 180, 180),
                                                  finite(R::EarlierCheckpoint, 150, 180), finite(R::NeighbourBatch, 180, 150)}));
    EXPECT_EQ(v.label, TriageLabel::DataAndState);
    EXPECT_EQ(triageLabelName(v.label), "data x state");
    EXPECT_EQ(triageLabelKey(v.label), "data_x_state");
}

TEST(Triage, AFiniteReplayOfTheStepIsNotReproducible)
{
    const TriageVerdict v = judgeTriage(evidence({finite(R::Incident, 180, 180), finite(R::IncidentAgain, 180, 180),
                                                  finite(R::EarlierCheckpoint, 150, 180), finite(R::NeighbourBatch, 180, 150)}));
    EXPECT_EQ(v.label, TriageLabel::NotReproducible);
    EXPECT_NE(v.why.find("hardware"), std::string::npos) << v.why;
}

TEST(Triage, TwoReplaysThatDisagreeAreNotReproducible)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 180, 180), finite(R::IncidentAgain, 180, 180),
                                                  nanAtDiv(R::EarlierCheckpoint, 150, 180), finite(R::NeighbourBatch, 180, 150)}));
    EXPECT_EQ(v.label, TriageLabel::NotReproducible);
    EXPECT_NE(v.why.find("not deterministic"), std::string::npos) << v.why;
}

TEST(Triage, TwoBlowUpsThatDifferInTheLossAreNotedButStillJudged)
{
    TriageReplay first = finite(R::Incident, 230, 230, 2.7e8);
    TriageReplay second = finite(R::IncidentAgain, 230, 230, 2.8e8);
    const TriageVerdict v = judgeTriage(evidence({first, second, finite(R::EarlierCheckpoint, 200, 230, 1.9e8),
                                                  finite(R::NeighbourBatch, 230, 200)}));
    EXPECT_EQ(v.label, TriageLabel::Data);
    ASSERT_EQ(v.details.size(), 1u);
    EXPECT_NE(v.details[0].find("not deterministic"), std::string::npos) << v.details[0];
}

TEST(Triage, AFiniteButHugeLossHasBlownUpAgainstTheTypicalLoss)
{
    const TriageReplay huge = finite(R::Incident, 230, 230, 2.7e8);
    EXPECT_TRUE(triageReplayBlewUp(huge, 0.7));
    EXPECT_FALSE(triageReplayBlewUp(finite(R::Incident, 230, 230, 1.4), 0.7)); // twice the typical: noise
    EXPECT_FALSE(triageReplayBlewUp(huge, std::nullopt)); // no typical loss: only NaN/Inf count
    EXPECT_NE(triageResultText(huge, 0.7).find("blown up"), std::string::npos);
    EXPECT_EQ(triageResultText(finite(R::Incident, 230, 230), 0.7), "finite");
    EXPECT_EQ(triageResultText(nanAtDiv(R::Incident, 180, 180), 0.7), "NaN/Inf at aten::div in norm");
}

TEST(Triage, WithoutAnEarlierCheckpointFiniteNeighboursSayTheBatchIsNeeded)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 0, 0), nanAtDiv(R::IncidentAgain, 0, 0),
                                                  missing(R::EarlierCheckpoint, -1, 0, "no checkpoint before 0"),
                                                  finite(R::NeighbourBatch, 0, 50)}));
    EXPECT_EQ(v.label, TriageLabel::Data);
    EXPECT_NE(v.why.find("not ruled out"), std::string::npos) << v.why;
    EXPECT_TRUE(anyDetailHas(v, "no checkpoint before"));
}

TEST(Triage, WithoutNeighboursABatchFiniteOnAnEarlierStateNeedsThisState)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 180, 180), nanAtDiv(R::IncidentAgain, 180, 180),
                                                  finite(R::EarlierCheckpoint, 150, 180),
                                                  missing(R::NeighbourBatch, 180, -1, "no other saved batch")}));
    EXPECT_EQ(v.label, TriageLabel::State);
    EXPECT_NE(v.why.find("not ruled out"), std::string::npos) << v.why;
}

TEST(Triage, NothingToCompareWithIsUndetermined)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 0, 0), nanAtDiv(R::IncidentAgain, 0, 0),
                                                  missing(R::EarlierCheckpoint, -1, 0, "no checkpoint before 0"),
                                                  missing(R::NeighbourBatch, 0, -1, "no other saved batch")}));
    EXPECT_EQ(v.label, TriageLabel::Undetermined);
}

TEST(Triage, AFailedReplayOfTheStepIsUndeterminedAndSaysWhy)
{
    const TriageVerdict v = judgeTriage(evidence({missing(R::Incident, 180, 180, "the replay crashed inside LibTorch")}));
    EXPECT_EQ(v.label, TriageLabel::Undetermined);
    EXPECT_NE(v.why.find("crashed inside LibTorch"), std::string::npos) << v.why;
}

TEST(Triage, AFailedNeighbourIsMissingEvidenceNotAFiniteReplay)
{
    // Crashed neighbours say nothing about the state: with the batch finite on an earlier
    // checkpoint, that is "state needed", not data x state.
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 180, 180), nanAtDiv(R::IncidentAgain, 180, 180),
                                                  finite(R::EarlierCheckpoint, 150, 180),
                                                  missing(R::NeighbourBatch, 180, 150, "crashed")}));
    EXPECT_EQ(v.label, TriageLabel::State);
}

TEST(Triage, AnOlderPairedCheckpointIsNoted)
{
    const TriageVerdict v = judgeTriage(evidence({nanAtDiv(R::Incident, 150, 180), nanAtDiv(R::IncidentAgain, 150, 180),
                                                  nanAtDiv(R::EarlierCheckpoint, 100, 180), finite(R::NeighbourBatch, 150, 200)}));
    EXPECT_EQ(v.label, TriageLabel::Data);
    EXPECT_TRUE(anyDetailHas(v, "30 steps older"));
}

TEST(Triage, LabelAndRoleKeysReadBack)
{
    for (TriageLabel label : {TriageLabel::Data, TriageLabel::State, TriageLabel::DataAndState,
                              TriageLabel::NotReproducible, TriageLabel::Undetermined})
        EXPECT_EQ(triageLabelFromKey(triageLabelKey(label)), label);
    for (TriageRole role : {R::Incident, R::IncidentAgain, R::EarlierCheckpoint, R::NeighbourBatch})
        EXPECT_EQ(triageRoleFromKey(triageRoleKey(role)), role);
    EXPECT_FALSE(triageLabelFromKey("nonsense"));
}

// Issue 24: a neighbour batch that was itself an incident (the next NaN step of a run that never
// recovered) blew up on the checkpoint and made the label "state". It is no evidence about the
// state: shown, not counted.
TEST(Triage, ANeighbourThatWasAnIncidentIsNotEvidenceAboutTheState)
{
    TriageReplay incidentNeighbour = nanAtDiv(R::NeighbourBatch, 150, 181);
    incidentNeighbour.wasIncident = true;
    const TriageVerdict withHealthy = judgeTriage(evidence({nanAtDiv(R::Incident, 150, 180), nanAtDiv(R::IncidentAgain, 150, 180),
                                                            nanAtDiv(R::EarlierCheckpoint, 100, 180), incidentNeighbour,
                                                            finite(R::NeighbourBatch, 150, 170)}));
    EXPECT_EQ(withHealthy.label, TriageLabel::Data) << withHealthy.why;
    EXPECT_TRUE(anyDetailHas(withHealthy, "181")) << "the incident neighbour is named";
    EXPECT_TRUE(anyDetailHas(withHealthy, "not counted"));

    const TriageVerdict onlyIncidents = judgeTriage(evidence({nanAtDiv(R::Incident, 150, 180), nanAtDiv(R::IncidentAgain, 150, 180),
                                                              finite(R::EarlierCheckpoint, 100, 180), incidentNeighbour}));
    EXPECT_NE(onlyIncidents.label, TriageLabel::DataAndState) << onlyIncidents.why;
    EXPECT_TRUE(anyDetailHas(onlyIncidents, "No batch of a healthy step")) << "says what it could not rule out";
}
