// `nanscope compare` on the demo runs as a user runs it: where a blown-up run leaves a healthy
// one, that a run compared with itself never diverges, the JSON shape, and errors naming the run.
#include "AppTestSupport.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {

QJsonObject compareJson(const QStringList& runs)
{
    const auto result = runNanscope(QStringList{"compare"} + runs + QStringList{"--json"});
    EXPECT_EQ(result.exitCode, 0) << result.err.toStdString();
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8(), &error).object();
    EXPECT_EQ(error.error, QJsonParseError::NoError) << result.out.toStdString();
    return root;
}

QJsonObject seriesOf(const QJsonObject& comparison, const QString& name)
{
    for (const auto& value : comparison["series"].toArray())
        if (value.toObject()["series"].toString() == name)
            return value.toObject();
    return {};
}

} // namespace

TEST(CompareCommand, BlownUpRunLeavesTheHealthyOneBeforeItsBlowupAndOnlyItHasTheBlowup)
{
    const QJsonObject root = compareJson({demoRun("healthy"), demoRun("sudden-blowup")});
    const QJsonArray runs = root["runs"].toArray();
    ASSERT_EQ(runs.size(), 2);
    EXPECT_EQ(runs[0].toObject()["label"].toString(), demoRun("healthy"));
    EXPECT_EQ(runs[1].toObject()["name"].toString(), "sudden-blowup");
    const QJsonArray comparisons = root["comparisons"].toArray();
    ASSERT_EQ(comparisons.size(), 1);
    const QJsonObject pair = comparisons[0].toObject();
    EXPECT_EQ(pair["reference"].toInt(), 0);
    EXPECT_EQ(pair["other"].toInt(), 1);

    // The gradient norm leaves the healthy run's band by the blow-up's onset (step 230), and it is
    // the blown-up run that leaves.
    const QJsonObject gradNorm = seriesOf(pair, "grad_norm");
    ASSERT_FALSE(gradNorm.isEmpty());
    ASSERT_TRUE(gradNorm["diverged_at"].isDouble()) << QJsonDocument(gradNorm).toJson().toStdString();
    EXPECT_LE(gradNorm["diverged_at"].toInt(), 231);
    EXPECT_EQ(gradNorm["leaving_run"].toInt(), 1);
    for (const char* key : {"first_common_step", "last_common_step", "compared_points", "log_scale", "leaving_value",
                            "band_centre", "band_low", "band_high", "leaving_nonfinite"})
        EXPECT_TRUE(gradNorm.contains(key)) << key;
    const QJsonObject first = pair["first_divergence"].toObject();
    EXPECT_LE(first["step"].toInt(), gradNorm["diverged_at"].toInt());

    bool blowupOnlyInOther = false;
    for (const auto& value : pair["incidents"].toArray()) {
        const QJsonObject d = value.toObject();
        if (d["kind"].toString() == "blowup") {
            EXPECT_EQ(d["presence"].toString(), "only_other");
            EXPECT_TRUE(d["reference"].isNull());
            blowupOnlyInOther = d["other"].toObject()["onset_step"].toInt() == 230;
        }
    }
    EXPECT_TRUE(blowupOnlyInOther);
    EXPECT_EQ(root["settings"].toObject()["band_sigmas"].toDouble(), 4.0);
}

TEST(CompareCommand, ARunComparedWithItselfNeverDivergesAndSharesEveryIncident)
{
    const QJsonObject root = compareJson({demoRun("gradual-blowup"), demoRun("gradual-blowup")});
    const QJsonObject pair = root["comparisons"].toArray()[0].toObject();
    EXPECT_TRUE(pair["first_divergence"].isNull());
    ASSERT_FALSE(pair["series"].toArray().isEmpty());
    for (const auto& value : pair["series"].toArray())
        EXPECT_TRUE(value.toObject()["diverged_at"].isNull()) << value.toObject()["series"].toString().toStdString();
    ASSERT_FALSE(pair["incidents"].toArray().isEmpty());
    for (const auto& value : pair["incidents"].toArray()) {
        EXPECT_EQ(value.toObject()["presence"].toString(), "both");
        EXPECT_EQ(value.toObject()["onset_shift"].toInt(), 0);
    }
}

TEST(CompareCommand, TextSaysWhereTheyDivergeAndWhichRunIsWhich)
{
    const auto result = runNanscope({"compare", demoRun("healthy"), demoRun("sudden-blowup")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    EXPECT_TRUE(result.out.contains("A  " + demoRun("healthy"))) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("B against A: they diverge first at step")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("blowup at step 230 (critical, sudden")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("only in B")) << result.out.toStdString();
}

TEST(CompareCommand, ARunThatCannotBeOpenedIsNamed)
{
    QTemporaryDir empty;
    const auto result = runNanscope({"compare", demoRun("healthy"), empty.path()});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains("cannot open run " + empty.path())) << result.err.toStdString();
    EXPECT_TRUE(result.out.isEmpty());

    const auto alone = runNanscope({"compare", demoRun("healthy")});
    EXPECT_EQ(alone.exitCode, 2);
    EXPECT_TRUE(alone.err.contains("two or more")) << alone.err.toStdString();
}
