#include "app/window/CheckpointLoader.h"
#include "app/children/ChildProgram.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>

#include <signal.h>
#include <sys/types.h>

using namespace nanscope;

namespace {

// Runs one request of a shell script to its outcome, or gives up after `timeoutMs`.
std::optional<ChildOutcome> runScript(ChildProgram& child, const QString& script, int timeoutMs = 10000)
{
    std::optional<ChildOutcome> result;
    child.setProgram("/bin/sh");
    child.start({"-c", script}, [&](const ChildOutcome& outcome) { result = outcome; });
    QElapsedTimer clock;
    clock.start();
    while (!result && clock.elapsed() < timeoutMs)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return result;
}

} // namespace

TEST(ChildProgram, SuccessHandsBackTheChildsOutput)
{
    ChildProgram child;
    auto outcome = runScript(child, "printf '{\"ok\": 1}'");
    ASSERT_TRUE(outcome);
    EXPECT_TRUE(outcome->succeeded());
    EXPECT_EQ(outcome->standardOutput, QByteArray("{\"ok\": 1}"));
}

TEST(ChildProgram, NonZeroExitReportsTheChildsErrorLine)
{
    ChildProgram child;
    auto outcome = runScript(child, "echo 'nanscope: ckpt.pt: not a checkpoint' >&2; exit 2");
    ASSERT_TRUE(outcome);
    EXPECT_EQ(outcome->kind, ChildOutcome::Kind::ExitedWithError);
    EXPECT_EQ(outcome->message, QString("ckpt.pt: not a checkpoint"));
}

TEST(ChildProgram, CrashIsReportedNotFatal)
{
    ChildProgram child;
    auto outcome = runScript(child, "kill -SEGV $$");
    ASSERT_TRUE(outcome);
    EXPECT_EQ(outcome->kind, ChildOutcome::Kind::Crashed);
    EXPECT_TRUE(outcome->message.contains("crashed")) << outcome->message.toStdString();
}

TEST(ChildProgram, LatestRequestWins)
{
    ChildProgram child;
    child.setProgram("/bin/sh");
    int firstReplies = 0;
    child.start({"-c", "sleep 5; echo first"}, [&](const ChildOutcome&) { ++firstReplies; });
    auto second = runScript(child, "echo second");
    ASSERT_TRUE(second);
    EXPECT_EQ(second->standardOutput.trimmed(), QByteArray("second"));
    QCoreApplication::processEvents(QEventLoop::AllEvents, 100);
    EXPECT_EQ(firstReplies, 0) << "a replaced request must never report";
}

TEST(ChildProgram, TimeoutStopsAHungChild)
{
    QElapsedTimer clock;
    clock.start();
    const ChildOutcome outcome = ChildProgram::runAndWait("/bin/sh", {"-c", "sleep 30"}, 300);
    EXPECT_EQ(outcome.kind, ChildOutcome::Kind::TimedOut);
    EXPECT_LT(clock.elapsed(), 10000);
}

// Before the one runner, the checkpoints pane never heard of a child that could not start and
// waited forever.
TEST(ChildProgram, CheckpointLoaderReportsAChildThatCannotStart)
{
    CheckpointLoader loader;
    loader.setProgram("/nonexistent/nanscope-missing");
    QSignalSpy loaded(&loader, &CheckpointLoader::loaded);
    loader.load(10, {{10, "/tmp/step_00000010.pt"}});
    ASSERT_TRUE(loaded.wait(10000)) << "the pane would wait forever";
    const QString error = loaded.at(0).at(2).toString();
    EXPECT_TRUE(error.contains("cannot start")) << error.toStdString();
    EXPECT_TRUE(error.contains("nanscope-missing")) << error.toStdString();
}

// Issue 23: cancel() waited up to 2 s on the GUI thread for the killed child, on every "latest
// request wins". It now returns at once; the killed child is reaped from the event loop, and no
// zombie or orphan is left behind.
TEST(ChildProgram, CancelDoesNotWaitAndTheKilledChildIsReaped)
{
    QTemporaryDir dir;
    const QString pidFile = dir.filePath("pid");
    ChildProgram child;
    child.setProgram("/bin/sh");
    int replies = 0;
    child.start({"-c", QString("echo $$ > '%1'; exec sleep 30").arg(pidFile)}, [&](const ChildOutcome&) { ++replies; });
    QElapsedTimer clock;
    clock.start();
    while (!QFileInfo(pidFile).size() && clock.elapsed() < 10000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QFile file(pidFile);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const pid_t pid = pid_t(file.readAll().trimmed().toLongLong());
    ASSERT_GT(pid, 0);
    child.cancel();
    EXPECT_FALSE(child.isRunning());
    // Reaped: waitpid by QProcess, after which the pid no longer exists (not even as a zombie).
    clock.restart();
    while (::kill(pid, 0) == 0 && clock.elapsed() < 10000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    EXPECT_NE(::kill(pid, 0), 0) << "the cancelled child is still there";
    EXPECT_EQ(replies, 0) << "a cancelled request never reports";
}

// Large answers are decoded off the GUI thread, and a decode that finishes after its request was
// replaced never reports.
TEST(ChildProgram, DecodeRunsOffTheGuiThreadAndOnlyForTheCurrentRequest)
{
    ChildProgram child;
    child.setProgram("/bin/sh");
    QThread* decodedOn = nullptr;
    std::atomic<int> decodes{0};
    int firstReplies = 0;
    std::optional<ChildOutcome> second;
    child.start({"-c", "echo first"}, [&](const ChildOutcome&) { ++firstReplies; },
                [&](const ChildOutcome&) {
                    QThread::msleep(300); // still decoding when the second request starts
                    ++decodes;
                });
    QElapsedTimer clock;
    clock.start();
    while (decodes == 0 && child.isRunning() && clock.elapsed() < 200)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    child.start({"-c", "echo second"}, [&](const ChildOutcome& outcome) { second = outcome; },
                [&](const ChildOutcome&) {
                    decodedOn = QThread::currentThread();
                    ++decodes;
                });
    clock.restart();
    while (!second && clock.elapsed() < 10000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->standardOutput.trimmed(), QByteArray("second"));
    EXPECT_NE(decodedOn, nullptr);
    EXPECT_NE(decodedOn, QCoreApplication::instance()->thread()) << "decoded on the GUI thread";
    QThread::msleep(400);
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    EXPECT_EQ(firstReplies, 0) << "a replaced request never reports, even after its decode";
}

TEST(ChildProgram, ProgressLinesAreSignalledAndKeptOutOfTheErrorText)
{
    ChildProgram child;
    QSignalSpy progress(&child, &ChildProgram::progress);
    // Split across writes, as a child's stderr arrives: a progress line, a half line, its end.
    auto outcome = runScript(child, "printf 'nanscope-progress 40 replaying the incident at step 230\\n' >&2; sleep 0.1;"
                                    "printf 'nanscope: run/ckpt.pt: not a ' >&2; sleep 0.1;"
                                    "printf 'checkpoint\\nnanscope-progress 95 writing\\n' >&2; exit 2");
    ASSERT_TRUE(outcome);
    ASSERT_EQ(progress.count(), 2);
    EXPECT_EQ(progress.at(0).at(0).toInt(), 40);
    EXPECT_EQ(progress.at(0).at(1).toString(), QString("replaying the incident at step 230"));
    EXPECT_EQ(progress.at(1).at(0).toInt(), 95);
    EXPECT_EQ(outcome->message, QString("run/ckpt.pt: not a checkpoint")) << "no progress line in the error";
}

TEST(ChildProgram, AProgressLineReadsBackWhatWasWritten)
{
    int percent = -1;
    QString what;
    ASSERT_TRUE(parseChildProgressLine(childProgressLine(0.404, "scanning\n the run"), &percent, &what));
    EXPECT_EQ(percent, 40);
    EXPECT_EQ(what, QString("scanning the run"));
    EXPECT_FALSE(parseChildProgressLine("nanscope: progress 40", &percent, &what));
    EXPECT_FALSE(parseChildProgressLine("nanscope-progress 400 too far", &percent, &what));
}

// Issue 28: the replay, the triage and the checkpoint loader each worded a crash their own way.
TEST(ChildProgram, EveryChildsFailureReadsTheSameWay)
{
    ChildProgram child;
    auto crashed = runScript(child, "echo 'terminate called after throwing c10::Error' >&2; kill -SEGV $$");
    ASSERT_TRUE(crashed);
    const QString text = crashed->failureText("The replay of step 180");
    EXPECT_TRUE(text.startsWith("The replay of step 180 crashed, in a process of its own: nanscope goes on.")) << text.toStdString();
    EXPECT_TRUE(text.contains("c10::Error")) << "the end of what the child said";
    auto failed = runScript(child, "echo 'nanscope: ckpt.pt: not a checkpoint' >&2; exit 2");
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->failureText("Reading ckpt.pt"), QString("ckpt.pt: not a checkpoint"));
    auto ok = runScript(child, "true");
    ASSERT_TRUE(ok);
    EXPECT_TRUE(ok->failureText("Anything").isEmpty());
}
