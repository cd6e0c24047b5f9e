// The scan's running median (core/scan/Onset.h, `smoothed`) slides a sorted window (up to a
// half-width of 128 rows) or two sorted halves (wider) along the series instead of sorting each
// window afresh; its medians must be the ones a sort gives, to the bit, on both sides of that
// width, since the scan's JSON is compared byte for byte. A 100,000-step loss took minutes a rank
// before (the divergence rule's window is a twentieth of the log).
#include "core/scan/Onset.h"
#include "core/scan/RobustStats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// The definition: each window copied and its median taken by medianInPlace.
std::vector<double> sortedWindowMedians(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    std::vector<double> out;
    for (size_t i = begin; i < end; ++i) {
        const size_t lo = i >= begin + size_t(h) ? i - size_t(h) : begin;
        const size_t hi = std::min(s.size(), i + size_t(h) + 1);
        std::vector<double> window;
        for (size_t j = lo; j < hi; ++j)
            window.push_back(s.at(j));
        out.push_back(medianInPlace(window));
    }
    return out;
}

} // namespace

TEST(RunningMedian, EveryWindowsMedianIsTheSortedOnesToTheBit)
{
    std::mt19937 rng(7);
    std::lognormal_distribution<double> noise(0.0, 1.0);
    std::uniform_int_distribution<int> pick(0, 19);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (int64_t i = 0; i < 3000; ++i) {
        steps.push_back(i);
        const int kind = pick(rng);
        // Ties (repeated values, zeros), NaN and Inf rows among the noise.
        values.push_back(kind == 0 ? nan : kind == 1 ? std::numeric_limits<double>::infinity()
                                   : kind < 5      ? 0.5
                                   : kind == 5     ? 0.0
                                                   : noise(rng));
    }
    const LogSeries s = makeLogSeries(steps, values);
    for (int64_t h : {0, 1, 2, 4, 25, 128, 129, 150, 5000})
        for (auto [begin, end] : {std::pair<size_t, size_t>{0, s.size()}, {100, 2500}, {2990, 3000}, {17, 18}}) {
            const auto expected = sortedWindowMedians(s, begin, end, h);
            const auto got = smoothed(s, begin, end, h);
            ASSERT_EQ(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(std::memcmp(&got[i], &expected[i], sizeof(double)), 0)
                    << "h " << h << ", rows " << begin << ".." << end << ", row " << begin + i << ": " << got[i]
                    << " against " << expected[i];
        }
    EXPECT_TRUE(smoothed(s, 5, 5, 3).empty());
}
