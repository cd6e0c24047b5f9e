// The judgements every view, command and report share, each decided in one place.
#include "core/run/CheckpointForm.h"
#include "core/run/LayerNames.h"
#include "core/run/RunReader.h"
#include "core/scan/Diagnosis.h"
#include "core/scan/Incident.h"
#include "core/scan/LayerHealth.h"
#include "core/scan/EpsilonDomination.h"
#include "core/scan/ScanConfig.h"
#include "core/importers/OptimizerState.h"
#include "core/tensor/BatchNormHealth.h"

#include <gtest/gtest.h>

#include "TestRuns.h"

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace nanscope;

namespace {
Incident incidentNaming(Severity severity, std::vector<std::string> layers, std::vector<std::string> onsetNames = {})
{
    Incident incident;
    incident.severity = severity;
    incident.layers = std::move(layers);
    for (auto& name : onsetNames)
        incident.evidence.layerOnsets.push_back(LayerOnset{name, "activations", 10});
    return incident;
}
} // namespace

TEST(LayerHealth, IconsFollowTheIncidentsNotTheRawGradients)
{
    ScanReport scan;
    // A skipped non-finite step that training recovered from: a warning, so its layer is not red.
    scan.incidents.push_back(incidentNaming(Severity::Warning, {"fc2.weight"}));
    // A critical blow-up blamed on a module (from /activations): every parameter of it is bad.
    scan.incidents.push_back(incidentNaming(Severity::Critical, {}, {"fc1"}));
    const auto health = judgeLayerHealth({"fc1.weight", "fc1.bias", "fc10.weight", "fc2.weight", "fc3.weight"}, scan);
    EXPECT_EQ(health, (std::vector<LayerHealth>{LayerHealth::Bad, LayerHealth::Bad, LayerHealth::Ok, LayerHealth::Warning,
                                                LayerHealth::Ok}));
}

TEST(LayerHealth, TheWorstIncidentWins)
{
    ScanReport scan;
    scan.incidents.push_back(incidentNaming(Severity::Warning, {"a.weight"}));
    scan.incidents.push_back(incidentNaming(Severity::Critical, {"a.weight"}));
    scan.incidents.push_back(incidentNaming(Severity::Info, {"b.weight"}));
    EXPECT_EQ(judgeLayerHealth({"a.weight", "b.weight"}, scan), (std::vector<LayerHealth>{LayerHealth::Bad, LayerHealth::Ok}));
}

TEST(LayerNames, ModulesOwnParametersByPathNotByPrefix)
{
    EXPECT_EQ(layernames::owningModule("encoder.layers.0.attn.weight"), "encoder.layers.0.attn");
    EXPECT_EQ(layernames::owningModule("bias"), "");
    EXPECT_EQ(layernames::leafName("encoder.0.weight"), "weight");
    EXPECT_TRUE(layernames::isWithin("fc1.weight", "fc1"));
    EXPECT_FALSE(layernames::isWithin("fc10.weight", "fc1"));
    const std::vector<std::string> modules{"fc1", "fc10", "bn"};
    EXPECT_EQ(layernames::moduleColumn(modules, "fc10.weight"), 1);
    EXPECT_EQ(layernames::moduleColumn(modules, "bn"), 2);
    EXPECT_EQ(layernames::moduleColumn(modules, "head.weight"), -1);
}

TEST(IncidentExtent, AnIncidentAtStepZeroDoesNotZoomPastTheData)
{
    Incident incident;
    incident.onsetStep = 0;
    incident.nonfiniteStep = 400;
    EXPECT_EQ(incidentEndStep(incident), 400);
    const StepRange range = incidentViewRange(incident, 0, 1000);
    EXPECT_EQ(range.first, 0.0) << "was -240";
    EXPECT_EQ(range.last, 640.0);
    const StepRange nearEnd = incidentViewRange(incident, 0, 450);
    EXPECT_EQ(nearEnd.last, 450.0) << "was 640, past the last logged step";
}

TEST(IncidentExtent, EndsAtTheEvidenceWindowWithoutANonfiniteStep)
{
    Incident incident;
    incident.onsetStep = 100;
    incident.evidence.windowEndStep = 130;
    EXPECT_EQ(incidentEndStep(incident), 130);
    const StepRange range = incidentViewRange(incident, 0, 10000);
    EXPECT_EQ(range.first, 80.0);
    EXPECT_EQ(range.last, 150.0);
}

// A recovered burst says its first non-finite step, and still spans to its last (the view and the
// spike-aftermath rule read its end).
TEST(IncidentExtent, ANonfiniteBurstEndsAtItsLastStepThoughItSaysItsFirst)
{
    Incident incident;
    incident.kind = IncidentKind::NonfiniteLoss;
    incident.onsetStep = 100;
    incident.nonfiniteStep = 100;
    incident.evidence.windowEndStep = 104;
    EXPECT_EQ(incidentEndStep(incident), 104);
}

TEST(ReplayableSteps, OnlyStepsWithBothACheckpointAndABatch)
{
    RunInfo info;
    info.checkpoints = {{100, "c100"}, {200, "c200"}, {300, "c300"}};
    info.batches = {{200, "b200"}, {250, "b250"}, {300, "b300"}};
    EXPECT_EQ(info.replayableSteps(), (std::vector<int64_t>{200, 300}));
}

TEST(ReplayableSteps, AStateDictCheckpointIsNotReplayableAndSaysWhy)
{
    RunInfo info;
    info.checkpoints = {{100, "c100"}, {200, "c200"}, {300, "c300"}};
    info.batches = {{100, "b100"}, {200, "b200"}, {300, "b300"}};
    info.checkpointForms[100] = parseCheckpointForm("traced\n");
    info.checkpointForms[200] = parseCheckpointForm("state_dict\nthe model could not be scripted (A) nor traced (B); "
                                                    "make forward scriptable\n");
    EXPECT_EQ(info.replayableSteps(), (std::vector<int64_t>{100, 300}));
    EXPECT_EQ(info.whyNotReplayable(100), "");
    EXPECT_NE(info.whyNotReplayable(200).find("checkpoint 200 is a state_dict"), std::string::npos);
    EXPECT_NE(info.whyNotReplayable(200).find("nor traced (B); make forward scriptable"), std::string::npos);
    EXPECT_EQ(info.whyNothingReplays(), "");

    info.checkpoints.erase(100);
    info.checkpoints.erase(300);
    EXPECT_TRUE(info.replayableSteps().empty());
    EXPECT_NE(info.whyNothingReplays().find("replay is unavailable: checkpoint 200 is a state_dict"), std::string::npos)
        << info.whyNothingReplays();
    describeContents(info);
    EXPECT_NE(std::find(info.source.lacks.begin(), info.source.lacks.end(), info.whyNothingReplays()),
              info.source.lacks.end());
}

TEST(CheckpointFormFile, ReadsTheRecordersFormsBesideTheCheckpoints)
{
    test::ScratchDir dir;
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir / name, std::ios::binary) << text;
    };
    write("step_00000004.form", "scripted\n");
    write("step_00000008.form", "state_dict\nwhy it is\nand what to do\n");
    write("step_00000012.form", "a future form\n");
    write("step_00000016.pt", "not read");
    const auto forms = readCheckpointForms(dir.path());
    ASSERT_EQ(forms.size(), 3u);
    EXPECT_EQ(forms.at(4).kind, CheckpointForm::Kind::Scripted);
    EXPECT_EQ(forms.at(8).kind, CheckpointForm::Kind::StateDict);
    EXPECT_EQ(forms.at(8).whyNotReplayable, "why it is and what to do") << "one line for the lists it goes into";
    EXPECT_EQ(forms.at(12).kind, CheckpointForm::Kind::Unknown);
    EXPECT_EQ(whyFormCannotReplay(forms.at(12)), "") << "an unknown form is tried, not refused";
    ASSERT_TRUE(readFormBeside(dir / "step_00000008.pt"));
    EXPECT_EQ(readFormBeside(dir / "step_00000008.pt")->kind, CheckpointForm::Kind::StateDict);
    EXPECT_FALSE(readFormBeside(dir / "step_00000016.pt")) << "no form file: nothing to say";
    EXPECT_TRUE(readCheckpointForms(dir / "missing").empty());
}

TEST(BatchNormHealth, OneFloorForEveryView)
{
    using batchnorm::BufferHealth;
    EXPECT_EQ(batchnorm::judgeBuffers(0, 1.0), BufferHealth::Healthy);
    EXPECT_EQ(batchnorm::judgeBuffers(0, 1e-9), BufferHealth::Healthy) << "the view used to call 1e-9 collapsed, the scan did not";
    EXPECT_EQ(batchnorm::judgeBuffers(0, 1e-11), BufferHealth::Collapsed);
    EXPECT_EQ(batchnorm::judgeBuffers(0, -0.5), BufferHealth::Negative);
    EXPECT_EQ(batchnorm::judgeBuffers(3, 1.0), BufferHealth::Poisoned);
    EXPECT_EQ(batchnorm::judgeBuffers(0, std::nan("")), BufferHealth::Healthy) << "no finite element: nothing to judge";
    const auto history = batchnorm::judgeHistory({10, 20, 30, 40}, {0, 0, 0, 2}, {1.0, 1e-12, 0.5, 0.5});
    EXPECT_EQ(history.collapsedFrom, 20);
    EXPECT_EQ(history.poisonedFrom, 40);
    EXPECT_EQ(history.negativeFrom, -1);
    EXPECT_TRUE(batchnorm::isRunningVarianceName("features.bn1.running_var"));
    EXPECT_FALSE(batchnorm::isRunningVarianceName("features.bn1.running_mean"));
    EXPECT_EQ(ScanConfig{}.runningVarFloor, batchnorm::kCollapsedVariance)
        << "the scan's default floor is the views' floor (issue 28: two literals)";
}

// The scan used to suggest replaying a saved batch "from the checkpoint at or before the step",
// a pairing replay refuses.
TEST(ReplayableSteps, TheScanSuggestsOnlyAReplayThatReplayWillRun)
{
    RunInfo info;
    info.checkpoints = {{150, "checkpoints/step_00000150.pt"}, {180, "checkpoints/step_00000180.pt"}};
    info.batches = {{180, "batches/step_00000180.pt"}, {185, "batches/step_00000185.pt"}};
    const std::string replayable = scan::savedBatchNote(info, 180);
    EXPECT_NE(replayable.find("nanscope replay RUN_DIR --step 180"), std::string::npos) << replayable;
    const std::string notReplayable = scan::savedBatchNote(info, 185);
    EXPECT_NE(notReplayable.find("cannot be replayed"), std::string::npos) << notReplayable;
    EXPECT_EQ(notReplayable.find("step 150"), std::string::npos) << "no other checkpoint is offered: " << notReplayable;
    EXPECT_EQ(scan::savedBatchNote(info, 150), "") << "no batch saved at 150";
}

// Issue 28: the scan's adam_epsilon rule called half the elements dominated (>= 0.5), the optimizer
// flags of `stats` and the Checkpoints view did not (> 0.5). One line now, on both sides of it.
TEST(EpsilonDomination, TheStatsFlagsDrawTheScansLine)
{
    EXPECT_TRUE(epsilonDominated(0.5));
    EXPECT_FALSE(epsilonDominated(0.49));
    auto flagsAt = [](double share) {
        OptimizerParameterState parameter;
        parameter.hasState = true;
        parameter.epsilonDominatedShare = share;
        OptimizerGroup group;
        std::string all;
        for (const std::string& flag : optimizerFlags(parameter, group))
            all += flag + "; ";
        return all;
    };
    EXPECT_NE(flagsAt(0.5).find("epsilon dominates"), std::string::npos) << flagsAt(0.5);
    EXPECT_EQ(flagsAt(0.49).find("epsilon dominates"), std::string::npos) << flagsAt(0.49);
}
