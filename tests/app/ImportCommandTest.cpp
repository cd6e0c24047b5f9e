// `nanscope import`: a run directory written from another tool's logs reads back as the same run,
// and the source folder is never written into.
#include "AppTestSupport.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {

const QString kLoraFolder = QString(NANSCOPE_REAL_LOGS) + "/TANGHULU6__Llama3-8B-Mob__lr2e-3-divergence";

QJsonObject jsonOf(const QStringList& arguments)
{
    const auto result = runNanscope(arguments);
    EXPECT_EQ(result.exitCode == 0 || result.exitCode == 1, true) << result.err.toStdString();
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

QStringList filesUnder(const QString& folder)
{
    QStringList files;
    QDirIterator it(folder, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext())
        files << it.next();
    files.sort();
    return files;
}

} // namespace

TEST(ImportCommand, ATrainerLogBecomesARunDirectoryWithTheSameTablesAndIncidents)
{
    if (!QFileInfo::exists(kLoraFolder))
        GTEST_SKIP() << "real log folder not present: " << kLoraFolder.toStdString();
    QTemporaryDir out;
    const QString runDir = out.filePath("lora-run");
    const QStringList sourceFilesBefore = filesUnder(kLoraFolder);
    const auto imported = runNanscope({"import", kLoraFolder, runDir});
    ASSERT_EQ(imported.exitCode, 0) << imported.err.toStdString();
    EXPECT_TRUE(imported.out.contains("run.h5")) << imported.out.toStdString();
    EXPECT_EQ(filesUnder(kLoraFolder), sourceFilesBefore) << "import wrote into the folder it reads";

    const QJsonObject info = jsonOf({"info", runDir, "--json"});
    const QJsonObject groups = info["groups"].toObject();
    EXPECT_EQ(groups["scalars"].toObject()["rows"].toInt(), 3000);
    EXPECT_EQ(groups["eval"].toObject()["rows"].toInt(), 30) << "the evaluation keeps its own steps";
    EXPECT_TRUE(info["attributes"].toObject()["imported_from"].toString().contains("Trainer"));

    // The imported run scans as the source does.
    auto incidents = [](const QJsonObject& scan) {
        QStringList list;
        for (const auto& i : scan["incidents"].toArray())
            list << QString("%1@%2").arg(i.toObject()["kind"].toString()).arg(i.toObject()["onset_step"].toInt());
        return list;
    };
    const QStringList fromSource = incidents(jsonOf({"scan", kLoraFolder, "--json"}));
    EXPECT_FALSE(fromSource.isEmpty());
    EXPECT_EQ(incidents(jsonOf({"scan", runDir, "--json"})), fromSource);
}

TEST(ImportCommand, RefusesWhatItCannotWriteTruthfully)
{
    QTemporaryDir out;
    // No training loss logged: run.h5 requires one, and a NaN column would be a lie.
    const QString evalOnly = QString(NANSCOPE_REAL_LOGS) + "/jr7072__adl_hw3__eval-loss-nan";
    if (QFileInfo::exists(evalOnly)) {
        const auto result = runNanscope({"import", evalOnly, out.filePath("x")});
        EXPECT_EQ(result.exitCode, 2);
        EXPECT_TRUE(result.err.contains("no training loss")) << result.err.toStdString();
    }
    // A nanscope run is already a run.
    const auto again = runNanscope({"import", demoRun("healthy"), out.filePath("y")});
    EXPECT_EQ(again.exitCode, 2);
    EXPECT_TRUE(again.err.contains("already a nanscope run")) << again.err.toStdString();
    // A bad mode names the choices.
    const auto mode = runNanscope({"import", demoRun("healthy"), out.filePath("z"), "--checkpoints", "move"});
    EXPECT_EQ(mode.exitCode, 2);
    EXPECT_TRUE(mode.err.contains("link, copy or none")) << mode.err.toStdString();
}
