// spreadOverCores keeps helper threads asleep between calls: every call must still run its work on
// as many threads as asked, finish all of it, and never wait on helpers that are busy elsewhere or
// that do not exist (a forked child).
#include "core/tensor/SpreadOverCores.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace nanscope;

namespace {

// Runs 1,000 items over `threads` threads; returns how many times each item ran.
std::vector<int> spreadItems(int threads)
{
    std::vector<std::atomic<int>> done(1000);
    std::atomic<size_t> next{0};
    spreadOverCores(threads, [&] {
        for (size_t k = next++; k < done.size(); k = next++)
            ++done[k];
    });
    std::vector<int> counts;
    for (const auto& d : done)
        counts.push_back(d.load());
    return counts;
}

} // namespace

TEST(SpreadOverCoresTest, EveryItemRunsOnceWhateverTheThreadCount)
{
    // More threads than this machine has CPUs included: the helpers beyond them are unpinned.
    for (int threads : {1, 2, 3, 8, 2, 1})
        EXPECT_EQ(spreadItems(threads), std::vector<int>(1000, 1)) << threads << " threads";
}

TEST(SpreadOverCoresTest, RunsOnAsManyThreadsAsAsked)
{
    // Each thread waits until all have arrived (10 s at most): three arrive only if three run at once.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::atomic<int> arrived{0};
    std::set<std::thread::id> ids;
    std::mutex idsMutex;
    spreadOverCores(3, [&] {
        {
            std::lock_guard<std::mutex> lock(idsMutex);
            ids.insert(std::this_thread::get_id());
        }
        ++arrived;
        while (arrived.load() < 3 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
    });
    EXPECT_EQ(arrived.load(), 3);
    EXPECT_EQ(ids.size(), 3u);
    EXPECT_TRUE(ids.count(std::this_thread::get_id())) << "the caller takes a share";
}

TEST(SpreadOverCoresTest, ConcurrentAndNestedCallsAllFinish)
{
    // Two callers at once (the second finds the helpers busy), each of whose threads spreads
    // again from inside its work.
    std::atomic<int> innerItems{0};
    auto caller = [&] {
        spreadOverCores(2, [&] {
            std::atomic<int> next{0};
            spreadOverCores(2, [&] {
                while (next++ < 100)
                    ++innerItems;
            });
        });
    };
    std::thread other(caller);
    caller();
    other.join();
    EXPECT_EQ(innerItems.load(), 2 * 2 * 100);
}

TEST(SpreadOverCoresTest, ACallerWhoseShareThrowsWaitsForItsHelpersFirst)
{
    std::atomic<int> helperItems{0};
    const auto caller = std::this_thread::get_id();
    EXPECT_THROW(spreadOverCores(2,
                                 [&] {
                                     if (std::this_thread::get_id() == caller)
                                         throw std::runtime_error("caller's share failed");
                                     std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                     ++helperItems;
                                 }),
                 std::runtime_error);
    EXPECT_EQ(helperItems.load(), 1) << "the helper had finished when the exception came out";
    EXPECT_EQ(spreadItems(2), std::vector<int>(1000, 1)) << "and the helpers still serve";
}

TEST(SpreadOverCoresTest, AForkedChildSpreadsWorkWithoutItsParentsHelpers)
{
    // More threads than CPUs: among the helpers are unpinned ones, which the child asks for by the
    // same keys whichever CPU it runs on.
    const int threads = int(std::thread::hardware_concurrency()) + 2;
    EXPECT_EQ(spreadItems(threads), std::vector<int>(1000, 1)); // the parent's helpers now exist
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        alarm(20); // a child left waiting for helpers that were not forked dies instead of hanging
        const bool allOnce = spreadItems(threads) == std::vector<int>(1000, 1);
        _exit(allOnce ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}
