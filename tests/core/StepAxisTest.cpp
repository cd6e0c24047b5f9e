// Wall time and epoch as other x axes: mapping steps to them and back, which logged series can
// serve, and how ticks read.

#include "core/run/MemoryRunSource.h"
#include "core/run/RunFormat.h"
#include "core/run/StepAxis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace nanscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(StepAxis, MapsStepsToTheQuantityAndBackBetweenLoggedRows)
{
    // Ten seconds a step for 100 steps, then a one-hour pause, then ten seconds a step again.
    std::vector<int64_t> steps;
    std::vector<double> times;
    for (int64_t s = 0; s <= 200; s += 10) {
        steps.push_back(s);
        times.push_back(1.7e9 + s * 10.0 + (s > 100 ? 3600.0 : 0.0));
    }
    std::string why;
    const auto axis = StepAxis::fromSeries(StepAxisKind::WallTime, steps, times, &why);
    ASSERT_TRUE(axis) << why;
    EXPECT_DOUBLE_EQ(axis->valueAt(55) - axis->firstValue(), 550.0);
    EXPECT_DOUBLE_EQ(axis->stepAt(1.7e9 + 550.0), 55.0);
    // The pause lies between steps 100 and 110: half an hour in is within that span.
    const double duringPause = axis->stepAt(1.7e9 + 1000.0 + 1800.0);
    EXPECT_GT(duringPause, 100.0);
    EXPECT_LT(duringPause, 110.0);
    // Outside the logged rows: the ends.
    EXPECT_DOUBLE_EQ(axis->valueAt(-50), axis->firstValue());
    EXPECT_DOUBLE_EQ(axis->valueAt(500), axis->lastValue());
    EXPECT_DOUBLE_EQ(axis->stepAt(0), 0.0);
    EXPECT_DOUBLE_EQ(axis->stepAt(2e9), 200.0);
    EXPECT_EQ(axis->label(100), "16m 40s");
    EXPECT_EQ(axis->label(200), "1h 33m");
}

TEST(StepAxis, AnEpochCountedPerRowHasItsBoundariesAtTheFirstRowOfEachEpoch)
{
    // Lightning logs the epoch as an integer on every row: 0 for steps 0-49, 1 for 50-99, ...
    std::vector<int64_t> steps;
    std::vector<double> epochs;
    for (int64_t s = 0; s < 200; ++s) {
        steps.push_back(s);
        epochs.push_back(double(s / 50));
    }
    const auto axis = StepAxis::fromSeries(StepAxisKind::Epoch, steps, epochs);
    ASSERT_TRUE(axis);
    EXPECT_DOUBLE_EQ(axis->stepAt(1), 50.0);
    EXPECT_DOUBLE_EQ(axis->stepAt(3), 150.0);
    EXPECT_EQ(axis->label(120), "epoch 2");
    EXPECT_EQ(axis->format(2.25), "epoch 2.25");
    EXPECT_EQ(axis->format(1000.5), "epoch 1000.5") << "never an exponent";
    EXPECT_EQ(axis->format(1.0 / 3.0), "epoch 0.33");
    EXPECT_EQ(axis->format(0.3 + 0.6), "epoch 0.9") << "no float noise in a label";
}

TEST(StepAxis, RefusesSeriesThatCannotBeAnAxisAndSaysWhy)
{
    std::string why;
    EXPECT_FALSE(StepAxis::fromSeries(StepAxisKind::Epoch, {5}, {1.0}, &why));
    EXPECT_NE(why.find("fewer than two"), std::string::npos) << why;
    EXPECT_FALSE(StepAxis::fromSeries(StepAxisKind::Epoch, {1, 2, 3}, {kNaN, kNaN, 1.0}, &why));
    EXPECT_FALSE(StepAxis::fromSeries(StepAxisKind::Epoch, {1, 2, 3}, {2.0, 2.0, 2.0}, &why));
    EXPECT_NE(why.find("never grows"), std::string::npos) << why;
    // A clock reset every other row is not a time axis.
    EXPECT_FALSE(StepAxis::fromSeries(StepAxisKind::WallTime, {1, 2, 3, 4, 5, 6}, {10, 5, 11, 6, 12, 7}, &why));
    EXPECT_NE(why.find("goes back on 3 of 6 rows"), std::string::npos) << why;
    // One small step back in 20 rows (a clock adjustment) is held, not refused.
    std::vector<int64_t> steps;
    std::vector<double> times;
    for (int s = 0; s < 20; ++s) {
        steps.push_back(s);
        times.push_back(s == 10 ? 8.5 : double(s));
    }
    const auto held = StepAxis::fromSeries(StepAxisKind::WallTime, steps, times, &why);
    ASSERT_TRUE(held) << why;
    EXPECT_DOUBLE_EQ(held->valueAt(10), 9.0);
}

TEST(StepAxis, ElapsedTimeReadsAtTheScaleOfTheRun)
{
    EXPECT_EQ(formatElapsed(0), "0s");
    EXPECT_EQ(formatElapsed(45), "45s");
    EXPECT_EQ(formatElapsed(0.25), "0.25s") << "a run shorter than a second still reads in time";
    EXPECT_EQ(formatElapsed(12.5), "12.5s");
    EXPECT_EQ(formatElapsed(59.9999), "1m 00s");
    EXPECT_EQ(formatElapsed(750), "12m 30s");
    EXPECT_EQ(formatElapsed(3900), "1h 05m");
    EXPECT_EQ(formatElapsed(2 * 86400 + 3 * 3600), "2d 03h");
    EXPECT_EQ(formatElapsed(kNaN), "?");
}

TEST(StepAxis, ARunsAxesComeFromScalarsFirstThenAnyTableOfItsOwnRate)
{
    MemoryRunSource run;
    run.addSeriesTable(runformat::kScalars, {1, 2, 3, 4},
                       {{"loss", {1, 1, 1, 1}}, {runformat::kWallTime, {100, 110, 120, 130}}});
    // The Trainer logs the epoch on training and evaluation rows alike: a table of its own rate.
    run.addSeriesTable("scalars_epoch", {1, 2, 4}, {{runformat::kEpoch, {0.25, 0.5, 1.0}}});
    run.addSeriesTable("eval", {2, 4}, {{runformat::kWallTime, {kNaN, kNaN}}, {"eval_loss", {1, 1}}});
    const auto axes = readStepAxes(run);
    ASSERT_TRUE(axes.ok()) << axes.error();
    ASSERT_TRUE(axes->wallTime);
    EXPECT_DOUBLE_EQ(axes->wallTime->valueAt(2.5), 115.0);
    ASSERT_TRUE(axes->epoch);
    EXPECT_DOUBLE_EQ(axes->epoch->stepAt(0.75), 3.0);
    EXPECT_EQ(axes->axis(StepAxisKind::Epoch), &*axes->epoch);
    EXPECT_EQ(axes->axis(StepAxisKind::Step), nullptr);

    MemoryRunSource plain;
    plain.addSeriesTable(runformat::kScalars, {1, 2}, {{"loss", {1, 1}}, {runformat::kEpoch, {kNaN, kNaN}}});
    const auto none = readStepAxes(plain);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->wallTime);
    EXPECT_FALSE(none->epoch);
    ASSERT_EQ(none->notes.size(), 1u);
    EXPECT_NE(none->notes[0].find("/scalars/epoch is not used as an x axis"), std::string::npos) << none->notes[0];
}

} // namespace
} // namespace nanscope
