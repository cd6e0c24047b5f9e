#include "AppTestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>

#include <gtest/gtest.h>

using namespace nanscope::test;

TEST(CommandLine, InfoJsonDescribesTheRun)
{
    const auto result = runNanscope({"info", demoRun("batchnorm-poisoned"), "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8(), &error).object();
    ASSERT_EQ(error.error, QJsonParseError::NoError) << result.out.toStdString();
    EXPECT_EQ(root["run_name"].toString(), "batchnorm-poisoned");
    EXPECT_EQ(root["format_version"].toInt(), 1);
    const QJsonObject groups = root["groups"].toObject();
    for (const char* group : {"scalars", "layers", "activations", "buffers", "inputs", "events"})
        EXPECT_TRUE(groups.contains(group)) << group;
    EXPECT_EQ(groups["scalars"].toObject()["rows"].toInt(), 400);
    EXPECT_TRUE(groups["scalars"].toObject()["columns"].toArray().contains("grad_norm"));
    EXPECT_TRUE(groups["layers"].toObject()["names"].toArray().contains("bn1.weight"));
    EXPECT_TRUE(groups["buffers"].toObject()["names"].toArray().contains("bn1"));
    EXPECT_TRUE(root["checkpoints"].toArray().contains(200));
    EXPECT_TRUE(root["batches"].toArray().contains(200));
}

TEST(CommandLine, InfoOmitsGroupsTheRunLacks)
{
    const auto result = runNanscope({"info", demoRun("sudden-blowup"), "--json"});
    ASSERT_EQ(result.exitCode, 0);
    const QJsonObject groups = QJsonDocument::fromJson(result.out.toUtf8()).object()["groups"].toObject();
    EXPECT_FALSE(groups.contains("buffers")) << "the sudden-blowup model has no BatchNorm";
}

TEST(CommandLine, InfoOnABrokenRunExitsTwoNamingTheFile)
{
    QTemporaryDir dir;
    QFile file(dir.filePath("run.h5"));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("this is not hdf5");
    file.close();
    const auto result = runNanscope({"info", dir.path()});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains(dir.filePath("run.h5"))) << result.err.toStdString();
    EXPECT_TRUE(result.err.contains("not an HDF5 file")) << result.err.toStdString();
}

TEST(CommandLine, UnknownCommandsAndMissingArgumentsAreUsageErrors)
{
    EXPECT_EQ(runNanscope({"info"}).exitCode, 2);
    const auto demo = runNanscope({"demo", "/tmp/x", "--only", "no-such-run"});
    EXPECT_EQ(demo.exitCode, 2);
    EXPECT_TRUE(demo.err.contains("healthy")) << "the error lists the runs there are";
}

TEST(CommandLine, HelpListsEveryCommand)
{
    const auto result = runNanscope({"help"});
    EXPECT_EQ(result.exitCode, 0);
    for (const char* command : {"info", "demo", "scan", "replay", "stats", "diff"})
        EXPECT_TRUE(result.out.contains(command)) << command;
    const auto infoHelp = runNanscope({"info", "--help"});
    EXPECT_EQ(infoHelp.exitCode, 0);
    EXPECT_TRUE(infoHelp.out.contains("--json"));
    for (const char* command : {"info", "scan", "replay", "report", "stats", "diff", "demo"}) {
        const auto help = runNanscope({command, "--help"});
        EXPECT_TRUE(help.out.startsWith(QString("Usage: nanscope %1 [options]").arg(command)))
            << "the usage line names the command as typed: " << help.out.left(80).toStdString();
    }
}

// What an installed program is asked first. Run with no display at all: the answer must not need
// one (the window's parser would abort there, unable to load a platform plugin).
TEST(CommandLine, VersionPrintsTheProjectVersionWithoutADisplay)
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.remove("DISPLAY");
    environment.remove("WAYLAND_DISPLAY");
    environment.insert("QT_QPA_PLATFORM", "xcb");
    for (const char* flag : {"--version", "-v"}) {
        QProcess process;
        process.setProcessEnvironment(environment);
        process.start(NANSCOPE_BINARY, {flag});
        ASSERT_TRUE(process.waitForFinished(60000)) << flag;
        EXPECT_EQ(process.exitStatus(), QProcess::NormalExit) << flag;
        EXPECT_EQ(process.exitCode(), 0) << flag;
        EXPECT_EQ(QString::fromUtf8(process.readAllStandardOutput()), QString("nanscope %1\n").arg(NANSCOPE_VERSION)) << flag;
    }
}

TEST(CommandLine, ReplayJsonNamesTheCulpritAndTheBadSample)
{
    const auto result = runNanscope({"replay", demoRun("division-by-zero"), "--step", "180", "--bisect", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    EXPECT_TRUE(result.err.contains("runs code from the file")) << "replay says that it executes the checkpoint";
    const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8()).object();
    EXPECT_EQ(root["step"].toInt(), 180);
    EXPECT_TRUE(root["loss"].isNull()) << "a NaN loss is null in JSON";
    const QJsonObject culprit = root["forward"].toObject()["first_nonfinite"].toObject();
    EXPECT_EQ(culprit["op"].toString(), "aten::div");
    EXPECT_EQ(culprit["module"].toString(), "norm");
    EXPECT_EQ(culprit["code"].toString(), "return centered / scale") << "the text of the line that divided";
    EXPECT_EQ(culprit["inputs"].toArray().size(), 2);
    EXPECT_EQ(culprit["output"].toObject()["nan"].toInt(), 16);
    EXPECT_FALSE(root["forward"].toObject()["ops"].toArray().isEmpty());
    EXPECT_FALSE(root["backward"].toObject()["params"].toArray().isEmpty());
    EXPECT_EQ(root["bad_samples"].toArray(), QJsonArray{5});
}

TEST(CommandLine, ReplayOfAStepWithoutCheckpointListsTheStepsThatHaveOne)
{
    const auto result = runNanscope({"replay", demoRun("healthy"), "--step", "7"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains("no checkpoint for step 7")) << result.err.toStdString();
    EXPECT_TRUE(result.err.contains("0, 50, 100")) << result.err.toStdString();
    EXPECT_FALSE(result.err.contains("triage")) << "no batch of step 7 either: triage could not help";
}

// A saved batch without its own checkpoint (the recorder saves every incident's batch) replays on
// no checkpoint, but triage replays it on the latest earlier one (core/run/CheckpointPairing): the
// message says which, and how.
TEST(CommandLine, ReplayOfABatchWithoutItsCheckpointPointsToTriageOnTheLatestEarlierOne)
{
    const auto result = runNanscope({"replay", demoRun("division-by-zero"), "--step", "179"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains("no checkpoint for step 179 (the latest checkpoint before it is step 150: "
                                    "`nanscope triage RUN_DIR --step 179` replays batch 179 on it)"))
        << result.err.toStdString();
}

// A checkpoint that is a FIFO (or a directory, a broken link) is skipped by the run's listing;
// replay said only "no checkpoint for step N", which the corruption corpus counted as unclear.
TEST(CommandLine, ReplayNamesAStepFileThatIsNotARegularFile)
{
    QTemporaryDir dir;
    const QString run = dir.filePath("run");
    ASSERT_TRUE(QDir().mkpath(run + "/checkpoints"));
    ASSERT_TRUE(QFile::copy(nanscope::test::demoRun("division-by-zero") + "/run.h5", run + "/run.h5"));
    ASSERT_TRUE(QDir().mkpath(run + "/checkpoints/step_00000180.pt")) << "a directory where the checkpoint should be";
    const auto result = nanscope::test::runNanscope({"replay", run, "--step", "180"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains("checkpoints/step_00000180.pt is there but is not a regular file")) << result.err.toStdString();
}

// `info` says which other x axes the window can offer: the Guard stamps every step with its wall
// time; the demo runs log no epoch.
TEST(InfoCommand, NamesTheOtherXAxesTheRunLogs)
{
    const auto text = runNanscope({"info", demoRun("healthy")});
    ASSERT_EQ(text.exitCode, 0) << text.err.toStdString();
    EXPECT_TRUE(text.out.contains("x axes      step, wall time (")) << text.out.toStdString();
    EXPECT_FALSE(text.out.contains("epoch ")) << text.out.toStdString();

    const auto json = runNanscope({"info", demoRun("healthy"), "--json"});
    ASSERT_EQ(json.exitCode, 0) << json.err.toStdString();
    const QJsonObject axes = QJsonDocument::fromJson(json.out.toUtf8()).object().value("x_axes").toObject();
    const QJsonObject wall = axes.value("wall_time").toObject();
    EXPECT_EQ(wall.value("first_step").toInt(), 0);
    EXPECT_GE(wall.value("last").toDouble(), wall.value("first").toDouble());
    EXPECT_GT(wall.value("first").toDouble(), 1.7e9) << "seconds since the Unix epoch";
    EXPECT_TRUE(axes.value("epoch").isNull());
}
