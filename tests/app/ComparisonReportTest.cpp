// `nanscope report RUN --compare OTHER`: the comparison section in the report's formats, made by
// the real binary as a user would.
#include "AppTestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {
QString readAll(const QString& path)
{
    QFile file(path);
    file.open(QIODevice::ReadOnly);
    return QString::fromUtf8(file.readAll());
}
} // namespace

TEST(ComparisonReport, MarkdownAndHtmlSayWhereTheComparedRunDivergesAndWhatOnlyItHas)
{
    QTemporaryDir dir;
    const QString markdown = dir.filePath("report.md");
    auto result = runNanscope({"report", demoRun("healthy"), "-o", markdown, "--no-replay", "--compare", demoRun("sudden-blowup")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QString md = readAll(markdown);
    EXPECT_TRUE(md.contains("## Compared runs")) << md.toStdString();
    EXPECT_TRUE(md.contains("### B against A: diverges first at step")) << md.toStdString();
    EXPECT_TRUE(md.contains("| grad_norm |")) << md.toStdString();
    EXPECT_TRUE(md.contains("blowup at step 230 (critical, sudden")) << md.toStdString();

    // The HTML adds the overlay plot to the timeline's.
    const QString html = dir.filePath("report.html");
    result = runNanscope({"report", demoRun("healthy"), "-o", html, "--no-replay", "--compare", demoRun("sudden-blowup")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QString page = readAll(html);
    EXPECT_TRUE(page.contains("<h2>Compared runs</h2>"));
    EXPECT_EQ(page.count("data:image/png;base64,"), 2);
    EXPECT_TRUE(page.contains("each run's divergence from A marked"));
}

TEST(ComparisonReport, JsonHoldsTheComparisonAndARunThatCannotBeOpenedIsNamed)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("report.json");
    auto result = runNanscope({"report", demoRun("healthy"), "-o", path, "--no-replay", "--compare", demoRun("gradual-blowup")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QJsonObject comparison = QJsonDocument::fromJson(readAll(path).toUtf8()).object()["comparison"].toObject();
    ASSERT_EQ(comparison["runs"].toArray().size(), 2);
    ASSERT_EQ(comparison["comparisons"].toArray().size(), 1);
    EXPECT_FALSE(comparison["comparisons"].toArray()[0].toObject()["first_divergence"].isNull());

    const QString missing = dir.filePath("no-such-run");
    const QString other = dir.filePath("other.json");
    result = runNanscope({"report", demoRun("healthy"), "-o", other, "--no-replay", "--compare", missing});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains(missing)) << result.err.toStdString();
    EXPECT_FALSE(QFile::exists(other));
}

// A compared run is scanned with the settings the report's run is scanned with (`--config`):
// otherwise the incidents the two runs differ by would come from the settings, not the runs.
TEST(ComparisonReport, TheComparedRunIsScannedWithTheReportsSettings)
{
    QTemporaryDir dir;
    const QString settings = dir.filePath("scan.ini");
    QFile file(settings);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    // A gradual blow-up's onset moves when the scan looks back only 40 steps: the learning rate's
    // climb from step 100 is out of sight.
    file.write("[scan]\nlookback_steps = 40\nprecursor_lookback_steps = 40\n");
    file.close();
    auto incidentsOf = [](const QJsonArray& incidents) {
        QStringList listed;
        for (const QJsonValue& incident : incidents)
            listed << incident["kind"].toString() + " " + incident["severity"].toString() + " @" +
                          QString::number(incident["onset_step"].toInteger());
        return listed;
    };
    auto scanned = [&](const QStringList& extra) {
        const auto result = runNanscope(QStringList{"scan", demoRun("gradual-blowup"), "--json"} + extra);
        return incidentsOf(QJsonDocument::fromJson(result.out.toUtf8()).object()["incidents"].toArray());
    };
    const QStringList byDefault = scanned({});
    const QStringList withSettings = scanned({"--config", settings});
    ASSERT_NE(byDefault, withSettings) << "the setting changes nothing: the test shows nothing";

    const QString path = dir.filePath("report.json");
    const auto result = runNanscope({"report", demoRun("healthy"), "-o", path, "--no-replay", "--compare",
                                     demoRun("gradual-blowup"), "--config", settings});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QJsonArray runs =
        QJsonDocument::fromJson(readAll(path).toUtf8()).object()["comparison"].toObject()["runs"].toArray();
    ASSERT_EQ(runs.size(), 2);
    EXPECT_EQ(incidentsOf(runs[1].toObject()["incidents"].toArray()), withSettings);
}
