#include "app/CheckpointLoader.h"
#include "app/ChildProgram.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include <optional>

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
