// RunWriterThread: the Guard's run.h5 appends on a thread of their own. What a reader sees must be
// what the synchronous RunWriter would have written, in the same order, and a failed write must
// reach the caller rather than vanish on the other thread.
#include "FollowedRun.h"
#include "TestRuns.h"

#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriterThread.h"

#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace nanscope;

namespace {

namespace rf = runformat;

RunSchema twoTableSchema()
{
    RunSchema schema;
    schema.attributes = {{"run_name", "threaded"}};
    schema.scalars = {"loss", "grad_norm"};
    schema.layers = {"a.weight", "b.weight"};
    return schema;
}

} // namespace

TEST(RunWriterThread, EveryRowArrivesInOrderPastAFullQueueAndIsReadableAfterDrain)
{
    test::ScratchDir dir;
    auto created = RunWriterThread::create(dir.path(), twoTableSchema());
    ASSERT_TRUE(created) << created.error();
    RunWriterThread& writer = **created;
    // Three times the queue's bound: the appends that find it full wait, and nothing is dropped.
    const int steps = int(3 * RunWriterThread::kMaxQueued);
    for (int step = 0; step < steps; ++step) {
        ASSERT_TRUE(writer.appendScalars(step, {{"loss", 1.0 / (step + 1)}, {"grad_norm", double(step)}}));
        ASSERT_TRUE(writer.appendRow(rf::kLayers, step, {{"grad_norm", {float(step), -float(step)}}}));
    }
    ASSERT_TRUE(writer.appendEvent(steps - 1, rf::event::kNote, "last"));
    ASSERT_TRUE(writer.drain());

    // The writer is still open: a reader in another process follows it as it would a live run.
    test::FollowedRun live = test::followRun(dir.path());
    ASSERT_TRUE(live.opened) << live.output;
    EXPECT_TRUE(live.swmr);
    EXPECT_EQ(live.rows[rf::kScalars], steps) << "drain() returns once every queued row is in run.h5";
    EXPECT_EQ(live.rows[rf::kLayers], steps);
    EXPECT_EQ(live.rows[rf::kEvents], 1);
    EXPECT_DOUBLE_EQ(live.lastScalar["loss"], 1.0 / steps);
    EXPECT_TRUE(writer.close());
    // Closed, every row reads back in the order it was given.
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    auto loss = (*reader)->readSeries(rf::kScalars, "loss");
    ASSERT_TRUE(loss) << loss.error();
    ASSERT_EQ(loss->size(), size_t(steps));
    for (int step = 0; step < steps; ++step)
        ASSERT_DOUBLE_EQ((*loss)[step], 1.0 / (step + 1)) << "row " << step << " out of order";
    auto gradNorms = (*reader)->readColumn(rf::kLayers, "grad_norm", 1);
    ASSERT_TRUE(gradNorms) << gradNorms.error();
    EXPECT_EQ(gradNorms->back(), -float(steps - 1));
    EXPECT_FALSE(writer.appendScalars(steps, {{"loss", 0.0}})) << "an append after close is refused";
}

TEST(RunWriterThread, AFailedWriteReachesTheCallerAndNothingAfterItIsWritten)
{
    test::ScratchDir dir;
    auto created = RunWriterThread::create(dir.path(), twoTableSchema());
    ASSERT_TRUE(created) << created.error();
    RunWriterThread& writer = **created;
    ASSERT_TRUE(writer.appendScalars(0, {{"loss", 1.0}}));
    // The schema has no /activations: RunWriter refuses this row, on the writer thread.
    (void)writer.appendRow(rf::kActivations, 1, {{"min", {0.f}}});
    const Status drained = writer.drain();
    ASSERT_FALSE(drained) << "drain() reports the failed append";
    EXPECT_NE(drained.error().find("run.h5"), std::string::npos) << drained.error();
    EXPECT_NE(drained.error().find(rf::kActivations), std::string::npos) << drained.error();
    const Status later = writer.appendScalars(2, {{"loss", 2.0}});
    ASSERT_FALSE(later) << "the next append reports it too";
    EXPECT_EQ(later.error(), drained.error());
    EXPECT_FALSE(writer.close());

    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_EQ((*reader)->steps(rf::kScalars), std::vector<int64_t>{0}) << "the rows before the failure are kept";
}

// A training process may fork (a loader's worker, a shell-out). A child that inherits libhdf5's
// lock held by the writer thread hangs at its first HDF5 call, since that thread is not copied
// into it; a fork therefore waits for the job in hand. Forks land while rows are being written.
TEST(RunWriterThread, AProcessForkedWhileRowsAreWrittenCanStillUseHdf5)
{
    test::ScratchDir dir;
    auto created = RunWriterThread::create(dir.path(), twoTableSchema());
    ASSERT_TRUE(created) << created.error();
    RunWriterThread& writer = **created;
    for (int fork = 0; fork < 40; ++fork) {
        for (int row = 0; row < 20; ++row) {
            const int step = fork * 20 + row;
            ASSERT_TRUE(writer.appendScalars(step, {{"loss", 1.0}, {"grad_norm", 2.0}}));
            ASSERT_TRUE(writer.appendRow(rf::kLayers, step, {{"grad_norm", {1.f, 2.f}}}));
        }
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            // An HDF5 call in the child: every API call takes the library's lock.
            const hid_t list = H5Pcreate(H5P_FILE_ACCESS);
            ::_exit(list >= 0 && H5Pclose(list) >= 0 ? 0 : 3);
        }
        int status = 0;
        pid_t done = 0;
        // A hang never ends; a healthy child ends in milliseconds. Ten seconds tells them apart
        // on any machine.
        for (int wait = 0; wait < 1000 && done == 0; ++wait) {
            done = ::waitpid(child, &status, WNOHANG);
            if (done == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (done == 0) {
            ::kill(child, SIGKILL);
            ::waitpid(child, &status, 0);
            FAIL() << "fork " << fork << ": the child hung at its first HDF5 call";
        }
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "fork " << fork;
    }
    ASSERT_TRUE(writer.drain());
}
