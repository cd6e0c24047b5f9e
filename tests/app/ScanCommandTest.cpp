// `nanscope scan` as a CI script uses it: exit codes, the JSON shape, settings files.
#include "AppTestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {

QJsonObject scanJson(const QString& run, int expectedExit, const QStringList& extra = {})
{
    const auto result = runNanscope(QStringList{"scan", demoRun(run), "--json"} + extra);
    EXPECT_EQ(result.exitCode, expectedExit) << result.err.toStdString();
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8(), &error).object();
    EXPECT_EQ(error.error, QJsonParseError::NoError) << result.out.toStdString();
    return root;
}

} // namespace

TEST(ScanCommand, HealthyRunExitsZero)
{
    const QJsonObject root = scanJson("healthy", 0);
    EXPECT_EQ(root["run"].toObject()["name"].toString(), "healthy");
    for (const auto& incident : root["incidents"].toArray())
        EXPECT_NE(incident.toObject()["severity"].toString(), "critical");
}

TEST(ScanCommand, SuddenBlowupExitsOneWithEveryIncidentField)
{
    const QJsonObject root = scanJson("sudden-blowup", 1);
    const QJsonArray incidents = root["incidents"].toArray();
    ASSERT_FALSE(incidents.isEmpty());
    const QJsonObject first = incidents.first().toObject();
    for (const char* key : {"kind", "severity", "onset_step", "nonfinite_step", "pattern", "layers", "cause",
                            "suggestion", "evidence"})
        EXPECT_TRUE(first.contains(key)) << key;
    EXPECT_EQ(first["kind"].toString(), "blowup");
    EXPECT_EQ(first["severity"].toString(), "critical");
    EXPECT_EQ(first["pattern"].toString(), "sudden");
    EXPECT_EQ(first["onset_step"].toInt(), 230);
    EXPECT_TRUE(first["nonfinite_step"].isDouble());
    EXPECT_TRUE(first["layers"].toArray().first().toString().startsWith("fc1"));
    const QJsonObject evidence = first["evidence"].toObject();
    EXPECT_GT(evidence["jump_ratio"].toDouble(), 1e4);
    EXPECT_EQ(evidence["window"].toArray().size(), 2);
    // Non-blowup incidents carry null pattern and nonfinite_step.
    for (const auto& value : incidents) {
        const QJsonObject incident = value.toObject();
        if (incident["kind"].toString() != "blowup") {
            EXPECT_TRUE(incident["pattern"].isNull());
            EXPECT_TRUE(incident["nonfinite_step"].isNull());
        }
    }
}

TEST(ScanCommand, DivisionByZeroIsAWarningAndExitsZero)
{
    const QJsonObject root = scanJson("division-by-zero", 0);
    const QJsonArray incidents = root["incidents"].toArray();
    ASSERT_EQ(incidents.size(), 1);
    EXPECT_EQ(incidents.first().toObject()["kind"].toString(), "nonfinite_loss");
    EXPECT_EQ(incidents.first().toObject()["layers"].toArray().first().toString(), "norm");
}

TEST(ScanCommand, TextReportListsIncidentsMostSevereFirst)
{
    const auto result = runNanscope({"scan", demoRun("batchnorm-poisoned")});
    EXPECT_EQ(result.exitCode, 1);
    const int bn = result.out.indexOf("bn_corruption");
    const int nan = result.out.indexOf("nonfinite_loss");
    ASSERT_GE(bn, 0) << result.out.toStdString();
    ASSERT_GE(nan, 0);
    EXPECT_LT(bn, nan);
    EXPECT_TRUE(result.out.contains("cause:"));
    EXPECT_TRUE(result.out.contains("suggestion:"));
}

TEST(ScanCommand, SettingsFromFileAndFlags)
{
    QTemporaryDir dir;
    const QString ini = dir.filePath("scan.ini");
    QFile file(ini);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("[scan]\n# stricter spikes\nspike_decades = 2.5\n");
    file.close();
    const auto printed = runNanscope({"scan", "--config", ini, "--set", "jump_steps=5", "--print-config"});
    EXPECT_EQ(printed.exitCode, 0) << printed.err.toStdString();
    EXPECT_TRUE(printed.out.contains(QRegularExpression("spike_decades\\s+= 2.5"))) << printed.out.toStdString();
    EXPECT_TRUE(printed.out.contains(QRegularExpression("jump_steps\\s+= 5")));

    const QString json = dir.filePath("scan.json");
    QFile jsonFile(json);
    ASSERT_TRUE(jsonFile.open(QIODevice::WriteOnly));
    jsonFile.write("{\"spike_decades\": 3}");
    jsonFile.close();
    scanJson("healthy", 0, {"--config", json});
}

TEST(ScanCommand, BadInputIsAUsageErrorExitingTwo)
{
    EXPECT_EQ(runNanscope({"scan"}).exitCode, 2);
    const auto missing = runNanscope({"scan", "/no/such/run"});
    EXPECT_EQ(missing.exitCode, 2);
    EXPECT_TRUE(missing.err.contains("/no/such/run")) << missing.err.toStdString();
    const auto badKey = runNanscope({"scan", demoRun("healthy"), "--set", "no_such_key=1"});
    EXPECT_EQ(badKey.exitCode, 2);
    EXPECT_TRUE(badKey.err.contains("no_such_key"));
    const auto badValue = runNanscope({"scan", demoRun("healthy"), "--set", "spike_decades=lots"});
    EXPECT_EQ(badValue.exitCode, 2);
    QTemporaryDir dir;
    QFile file(dir.filePath("run.h5"));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("this is not hdf5");
    file.close();
    const auto broken = runNanscope({"scan", dir.path()});
    EXPECT_EQ(broken.exitCode, 2);
    EXPECT_TRUE(broken.err.contains("run.h5"));
}
