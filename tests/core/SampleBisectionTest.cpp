// The bisection both replay engines use to find a batch's bad samples (core/replay/SampleBisection),
// against a stand-in batch whose bad samples are known: a subset is bad when it holds one of them.
#include "core/replay/SampleBisection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace nanscope;

namespace {

// A batch of `n` with these bad samples; subsets of one sample cannot run (BatchNorm in training).
struct StandInBatch
{
    std::set<int64_t> bad;
    int runs = 0;
    bool operator()(const std::vector<int64_t>& samples)
    {
        ++runs;
        if (samples.size() < 2)
            return true;
        return std::any_of(samples.begin(), samples.end(), [&](int64_t s) { return bad.count(s) > 0; });
    }
};

} // namespace

TEST(SampleBisection, FindsEveryBadSampleAndNothingElse)
{
    for (const std::set<int64_t>& bad : {std::set<int64_t>{5}, std::set<int64_t>{0, 13}, std::set<int64_t>{2, 3, 30}}) {
        StandInBatch batch{bad};
        std::vector<std::string> notes;
        const auto found = bisectBadSamples(32, std::ref(batch), notes);
        EXPECT_EQ(std::set<int64_t>(found.begin(), found.end()), bad);
        EXPECT_TRUE(std::is_sorted(found.begin(), found.end()));
        EXPECT_TRUE(notes.empty());
        EXPECT_LT(batch.runs, 32) << "bisection, not one run per sample";
    }
}

TEST(SampleBisection, ACleanBatchHasNoneAndAnAllBadOneSaysSo)
{
    std::vector<std::string> notes;
    StandInBatch clean;
    EXPECT_TRUE(bisectBadSamples(16, std::ref(clean), notes).empty());
    EXPECT_EQ(clean.runs, 1) << "one run of the whole batch";
    StandInBatch allBad;
    for (int64_t i = 0; i < 6; ++i)
        allBad.bad.insert(i);
    EXPECT_EQ(bisectBadSamples(6, std::ref(allBad), notes).size(), 6u);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes.front().find("every sample is reported"), std::string::npos);
}
