// `nanscope triage` on the demo runs, by the real binary: the labels a person reading each run's
// story would give.
#include "AppTestSupport.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {

constexpr int kTriageTimeoutMs = 300000; // up to seven replays, each a child process

QJsonObject triageJson(const QString& run, int step)
{
    const auto result = runNanscope({"triage", demoRun(run), "--step", QString::number(step), "--json"}, kTriageTimeoutMs);
    EXPECT_EQ(result.exitCode, 0) << result.err.toStdString();
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

QJsonObject replayOfRole(const QJsonObject& triage, const QString& role)
{
    for (const auto& replay : triage["replays"].toArray())
        if (replay.toObject()["role"].toString() == role)
            return replay.toObject();
    return {};
}

} // namespace

// Step 180's batch holds a constant sample that the normalisation divides by zero: the batch
// does it on any state, and the batches around it are fine.
TEST(TriageCommand, DivisionByZeroIsTheData)
{
    const QJsonObject triage = triageJson("division-by-zero", 180);
    EXPECT_EQ(triage["label"].toString(), "data") << triage["why"].toString().toStdString();
    const QJsonObject incident = replayOfRole(triage, "incident");
    EXPECT_EQ(incident["checkpoint_step"].toInteger(), 180) << "checkpoint N holds the state step N ran on";
    EXPECT_EQ(incident["bad_op"].toString(), "aten::div");
    EXPECT_EQ(incident["bad_module"].toString(), "norm");
    EXPECT_TRUE(replayOfRole(triage, "incident_again")["blew_up"].toBool());
    const QJsonObject earlier = replayOfRole(triage, "earlier_checkpoint");
    EXPECT_EQ(earlier["checkpoint_step"].toInteger(), 150);
    EXPECT_TRUE(earlier["blew_up"].toBool());
    int neighbours = 0;
    for (const auto& replay : triage["replays"].toArray()) {
        const QJsonObject o = replay.toObject();
        if (o["role"].toString() != "neighbour_batch")
            continue;
        ++neighbours;
        EXPECT_EQ(o["checkpoint_step"].toInteger(), 180);
        EXPECT_FALSE(o["blew_up"].toBool()) << "batch " << o["batch_step"].toInteger();
    }
    EXPECT_EQ(neighbours, 4) << "two saved batches before 180 and two after";
}

// Step 231 ran on the weights step 230's fill-value batch destroyed: every batch blows up on
// them, while batch 231 is fine on checkpoint 230.
TEST(TriageCommand, TheStepAfterASuddenBlowupIsTheState)
{
    const QJsonObject triage = triageJson("sudden-blowup", 231);
    EXPECT_EQ(triage["label"].toString(), "state") << triage["why"].toString().toStdString();
    EXPECT_FALSE(replayOfRole(triage, "earlier_checkpoint")["blew_up"].toBool());
}

TEST(TriageCommand, TextNamesTheTableTheLabelAndWhy)
{
    const auto result = runNanscope({"triage", demoRun("division-by-zero"), "--step", "180"}, kTriageTimeoutMs);
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    EXPECT_TRUE(result.out.contains("earlier checkpoint")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("NaN/Inf at aten::div in norm")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("Label: data\n")) << result.out.toStdString();
}

TEST(TriageCommand, AStepWithoutABatchOrAStepIsAUsageError)
{
    const auto noBatch = runNanscope({"triage", demoRun("division-by-zero"), "--step", "181"});
    EXPECT_EQ(noBatch.exitCode, 2);
    EXPECT_TRUE(noBatch.err.contains("no saved batch for step 181")) << noBatch.err.toStdString();
    EXPECT_TRUE(noBatch.err.contains("180")) << "it lists the saved batches";
    EXPECT_EQ(runNanscope({"triage", demoRun("division-by-zero")}).exitCode, 2);
    EXPECT_EQ(runNanscope({"triage", demoRun("division-by-zero"), "--step", "x"}).exitCode, 2);
}
