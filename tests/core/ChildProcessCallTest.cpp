// Work that parses untrusted files runs in a forked child (core/run/ChildProcessCall.h): its answer
// comes back whole, its progress comes back as it goes, cancelling ends it, and a crash in it is an
// error naming the file instead of the end of the caller.
#include "core/run/ChildProcessCall.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

using namespace nanscope;

TEST(ChildProcessCall, TheAnswerComesBackWhole)
{
    std::string bytes("a\0b\xff", 4);
    bytes += std::string(200000, 'x'); // larger than a pipe's buffer
    auto answer = computeInChildProcess("test.pt", [&](const ProgressCallback&) -> Result<std::string> { return bytes; });
    ASSERT_TRUE(answer) << answer.error();
    EXPECT_EQ(*answer, bytes);
    auto refused = computeInChildProcess("test.pt", [](const ProgressCallback&) -> Result<std::string> {
        return Error{"test.pt: not a checkpoint"};
    });
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), "test.pt: not a checkpoint");
}

TEST(ChildProcessCall, ProgressComesBackAndCancelEndsTheChild)
{
    std::vector<double> seen;
    auto answer = computeInChildProcess(
        "test.pt",
        [](const ProgressCallback& progress) -> Result<std::string> {
            for (int i = 1; i <= 3; ++i)
                progress(i / 4.0, "file " + std::to_string(i));
            return std::string("done");
        },
        [&](double fraction, const std::string& what) {
            seen.push_back(fraction);
            EXPECT_EQ(what.rfind("file ", 0), 0u);
            return true;
        });
    ASSERT_TRUE(answer);
    EXPECT_EQ(seen, (std::vector<double>{0.25, 0.5, 0.75}));
    auto cancelled = computeInChildProcess(
        "test.pt",
        [](const ProgressCallback& progress) -> Result<std::string> {
            for (;;) {
                if (!progress(0.1, "still reading"))
                    return Error{"cancelled"};
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        },
        [](double, const std::string&) { return false; });
    ASSERT_FALSE(cancelled);
    EXPECT_EQ(cancelled.error(), "cancelled");
}

TEST(ChildProcessCall, ACrashIsAnErrorNamingTheFile)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "the sanitizer build computes in this process (ChildProcessCall.h)";
#endif
    auto crashed = computeInChildProcess("checkpoints/step_7.pt", [](const ProgressCallback&) -> Result<std::string> {
        std::raise(SIGSEGV);
        return std::string("never");
    });
    ASSERT_FALSE(crashed);
    EXPECT_NE(crashed.error().find("checkpoints/step_7.pt"), std::string::npos) << crashed.error();
    EXPECT_NE(crashed.error().find("crashed"), std::string::npos) << crashed.error();
}

TEST(ChildProcessCall, ADamagedAnswerIsRefusedNotBelieved)
{
    ByteWriter out;
    out.number<uint64_t>(uint64_t(1) << 60); // a count no answer can hold
    const std::string bytes = out.take();
    ByteReader in(bytes);
    EXPECT_THROW(in.texts(), std::out_of_range);
    const std::string three("abc");
    ByteReader shortRead(three);
    EXPECT_THROW(shortRead.number<uint64_t>(), std::out_of_range);
}
