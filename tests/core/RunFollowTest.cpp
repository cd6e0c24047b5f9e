// A reader follows a writer in another process, and a writer killed mid-run leaves every flushed
// row readable. The writer is tests/core/helpers/TestWriterMain.cpp.
#include "TestRuns.h"

#include "core/run/RunFolderFiles.h"
#include "core/run/RunReader.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace nanscope;
using namespace std::chrono_literals;

namespace {

// Starts the writer with its stdout on a pipe, so the test can read how far it got.
// A held writer keeps the run open after its last row until release().
struct WriterProcess
{
    enum class Close { WhenDone, OnRelease };
    pid_t pid = -1;
    FILE* output = nullptr;
    int hold = -1; // the write end of a held writer's stdin

    WriterProcess(const std::string& dir, int rows, int delayMs, Close close = Close::WhenDone)
    {
        int fds[2], in[2] = {-1, -1};
        if (pipe(fds) != 0 || (close == Close::OnRelease && pipe(in) != 0))
            return;
        pid = fork();
        if (pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            ::close(fds[0]);
            if (in[0] >= 0) {
                dup2(in[0], STDIN_FILENO);
                ::close(in[1]);
            }
            execl(NANSCOPE_TEST_WRITER, NANSCOPE_TEST_WRITER, dir.c_str(), std::to_string(rows).c_str(),
                  std::to_string(delayMs).c_str(), close == Close::OnRelease ? "--hold" : static_cast<char*>(nullptr),
                  static_cast<char*>(nullptr));
            _exit(127);
        }
        ::close(fds[1]);
        if (in[0] >= 0) {
            ::close(in[0]);
            hold = in[1];
        }
        output = fdopen(fds[0], "r");
    }
    // A held writer closes its run and exits.
    void release()
    {
        if (hold >= 0)
            ::close(hold);
        hold = -1;
    }
    // Blocks until the writer reports that row `row` is flushed. False if it died first.
    bool waitForRow(int row)
    {
        char line[64];
        while (std::fgets(line, sizeof line, output))
            if (std::atoi(line + 4) >= row)
                return true;
        return false;
    }
    int wait()
    {
        int status = 0;
        waitpid(pid, &status, 0);
        pid = -1;
        return status;
    }
    ~WriterProcess()
    {
        release();
        if (pid > 0) {
            kill(pid, SIGKILL);
            wait();
        }
        if (output)
            std::fclose(output);
    }
};

} // namespace

TEST(RunFollow, ReaderSeesRowsAppendedByAnotherProcess)
{
    test::ScratchDir dir;
    WriterProcess writer(dir.path(), 400, 5);
    ASSERT_TRUE(writer.waitForRow(3));
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_TRUE((*reader)->info().openedForSwmr) << "a live run must be opened for SWMR reading";
    const int64_t firstRows = (*reader)->table("scalars")->rows;
    EXPECT_GE(firstRows, 4);

    bool grew = false;
    for (int attempt = 0; attempt < 200 && !grew; ++attempt) {
        std::this_thread::sleep_for(20ms);
        auto refreshed = (*reader)->refresh();
        ASSERT_TRUE(refreshed) << refreshed.error();
        grew = *refreshed;
    }
    ASSERT_TRUE(grew) << "refresh() must see rows appended after open";
    const int64_t rows = (*reader)->table("layers")->rows;
    EXPECT_GT(rows, firstRows);
    auto column = (*reader)->readColumn("layers", "grad_norm", 1);
    ASSERT_TRUE(column);
    for (int64_t i = 0; i < rows; ++i)
        ASSERT_FLOAT_EQ((*column)[size_t(i)], float(i) + 0.5f) << "row " << i;
    EXPECT_EQ((*reader)->steps("layers").back(), (rows - 1) * 10);
}

TEST(RunFollow, KilledWriterLeavesEveryFlushedRowReadable)
{
    test::ScratchDir dir;
    WriterProcess writer(dir.path(), 100000, 1);
    ASSERT_TRUE(writer.waitForRow(150));
    kill(writer.pid, SIGKILL);
    writer.wait();

    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    const int64_t rows = (*reader)->table("layers")->rows;
    EXPECT_GE(rows, 151) << "every row reported as flushed must be readable after kill -9";
    auto loss = (*reader)->readSeries("scalars", "loss");
    ASSERT_TRUE(loss);
    for (size_t i = 0; i < loss->size(); ++i)
        ASSERT_DOUBLE_EQ((*loss)[i], 1.0 / double(i + 1));
    auto row = (*reader)->readRow("layers", "grad_norm", rows - 1);
    ASSERT_TRUE(row);
    EXPECT_FLOAT_EQ((*row)[2], float(rows - 1) + 0.25f);
}

// Issue 17: a run whose writer was killed is still marked open for write, so it is opened for
// SWMR reading, where HDF5 rereads metadata that fails its checksum (100 times by default, with
// waits). A damaged copy of such a run must still open, or fail, at once.
TEST(RunFollow, FlippedMetadataByteInAKilledWritersRunDoesNotHangOpen)
{
    test::ScratchDir dir;
    {
        WriterProcess writer(dir.path(), 100000, 1);
        ASSERT_TRUE(writer.waitForRow(50));
        kill(writer.pid, SIGKILL);
        writer.wait();
    }
    auto intact = RunReader::open(dir.path());
    ASSERT_TRUE(intact) << intact.error();
    ASSERT_TRUE((*intact)->info().openedForSwmr) << "the killed writer's run is still marked open for write";
    intact = Error{"closed"};

    for (const long offset : {27, 58, 139, 141, 161, 249, 276, 298, 341}) {
        test::ScratchDir copy;
        const std::string path = copy / "run.h5";
        std::filesystem::copy_file(dir / "run.h5", path);
        {
            FILE* file = std::fopen(path.c_str(), "r+b");
            ASSERT_NE(file, nullptr);
            std::fseek(file, offset, SEEK_SET);
            const int byte = std::fgetc(file);
            std::fseek(file, offset, SEEK_SET);
            std::fputc(byte ^ 0x5a, file);
            std::fclose(file);
        }
        // A hang (HDF5's 100 rereads of a bad checksum, with waits) fails at ctest's timeout; no
        // bound here depends on the machine's speed.
        auto reader = RunReader::open(copy.path());
        if (!reader)
            EXPECT_NE(reader.error().find(path), std::string::npos) << reader.error();
    }
}

// Live follow ends when the writer has gone: a writer that closed the run clears the superblock's
// write flags, one that was killed leaves them (the window then ends following after a quiet spell).
TEST(RunFollow, TheFileSaysWhetherItsWriterClosedIt)
{
    test::ScratchDir finished;
    {
        // Held open after its last row: the check below cannot race the writer's close.
        WriterProcess writer(finished.path(), 5, 1, WriterProcess::Close::OnRelease);
        ASSERT_TRUE(writer.waitForRow(4));
        EXPECT_TRUE(isMarkedOpenForWriting(finished / "run.h5")) << "marked while its writer runs";
        writer.release();
        const int status = writer.wait();
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_FALSE(isMarkedOpenForWriting(finished / "run.h5")) << "a closed run is not being written";

    test::ScratchDir killed;
    WriterProcess writer(killed.path(), 100000, 1);
    ASSERT_TRUE(writer.waitForRow(3));
    kill(writer.pid, SIGKILL);
    writer.wait();
    EXPECT_TRUE(isMarkedOpenForWriting(killed / "run.h5")) << "a killed writer leaves the marks";
    EXPECT_FALSE(isMarkedOpenForWriting(killed / "no-such-file.h5"));
}
