// What a series plot draws, computed without a canvas (widgets/SeriesData).

#include "widgets/SeriesData.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
} // namespace

TEST(SeriesData, NonfiniteValuesAreMarkersAndGapsNeverSegments)
{
    const SplitSeries s = splitSeries({0, 1, 2, 3, 4}, {1, kNaN, kInf, -kInf, 0}, /*logScale=*/true);
    EXPECT_EQ(s.nanX, QVector<double>{1});
    EXPECT_EQ(s.posX, QVector<double>{2});
    EXPECT_EQ(s.negX, QVector<double>{3});
    ASSERT_EQ(s.y.size(), 5);
    EXPECT_EQ(s.y[0], 1);
    for (int i = 1; i < 5; ++i)
        EXPECT_TRUE(std::isnan(s.y[i])) << "a gap at step " << i << " (0 on a log axis too)";
}

TEST(SeriesData, TheNearestLoggedStepTakesTheEarlierOneOnATie)
{
    EXPECT_EQ(nearestStepIndex({}, 3), -1);
    EXPECT_EQ(nearestStepIndex({0, 10, 20}, 5), 0);
    EXPECT_EQ(nearestStepIndex({0, 10, 20}, 6), 1);
    EXPECT_EQ(nearestStepIndex({0, 10, 20}, 99), 2);
}

TEST(SeriesData, CsvReadsBackTheSameNumbers)
{
    EXPECT_EQ(seriesCsv({10, 20, 30}, {0.1, kNaN, -kInf}, {0.1, 0.1, -kInf}).toStdString(),
              "step,value,smoothed\n10,0.1,0.1\n20,nan,0.1\n30,-inf,-inf\n");
}

TEST(SeriesData, LabelsAtOneStepStackAndTheSameTextIsDrawnOnce)
{
    const QRect area(70, 0, 600, 130); // five rows of 24 px
    std::vector<BandLabel> labels;
    for (const char* text : {"rank_nonfinite", "sudden jump", "sudden jump", "bad_input"})
        labels.push_back({text, 300, 100, 24});
    const auto places = stackBandLabels(labels, area, {});
    ASSERT_TRUE(places[0] && places[1] && places[3]);
    EXPECT_FALSE(places[2]) << "the second 'sudden jump' at the same step is drawn once";
    EXPECT_FALSE(places[0]->intersects(*places[1]));
    EXPECT_FALSE(places[1]->intersects(*places[3]));
    EXPECT_FALSE(places[0]->intersects(*places[3]));
}

TEST(SeriesData, LabelsKeepOffTheLegendAndHideWhenNoRowIsFree)
{
    const QRect area(70, 0, 600, 60); // two rows
    const QRect legend(70, 0, 150, 26);
    const std::vector<BandLabel> labels{{"spike", 75, 60, 24}, {"spike x3", 80, 70, 24}, {"spike x9", 85, 70, 24}};
    const auto places = stackBandLabels(labels, area, {legend});
    ASSERT_TRUE(places[0]);
    EXPECT_FALSE(places[0]->intersects(legend)) << "under the legend, not over it";
    EXPECT_FALSE(places[1]) << "no free row left";
    EXPECT_FALSE(places[2]);
}

TEST(SeriesData, ALabelNearTheRightEdgeReadsLeftwards)
{
    const QRect area(70, 0, 600, 130);
    const auto places = stackBandLabels({{"sudden jump x3.6e+16", 660, 160, 24}}, area, {});
    ASSERT_TRUE(places[0]);
    EXPECT_EQ(places[0]->right() + 1, 660) << "it ends at its band";
    EXPECT_LE(places[0]->right(), area.right());
}
