// What the axes of a plot read: labels a person can use at every scale (issue 27: a log axis with
// no label below 100, a learning rate reading "0.05 0.05 0.05 0.04999", a sub-second run's wall
// time reading "0s" at every tick).

#include "widgets/SeriesPlot.h"
#include "widgets/ValueAxisTicker.h"

#include "core/run/StepAxis.h"

#include <qcustomplot.h>

#include <QSet>

#include <memory>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
struct Ticks
{
    QVector<double> at;
    QVector<QString> labels;
};

Ticks drawnTicks(SeriesPlot& plot, QCPAxis* axis)
{
    plot.resize(900, 320);
    plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
    return {axis->tickVector(), axis->tickVectorLabels()};
}

bool allDifferent(const QVector<QString>& labels)
{
    return QSet<QString>(labels.begin(), labels.end()).size() == labels.size();
}

std::string joined(const QVector<QString>& labels)
{
    return QStringList(labels.begin(), labels.end()).join(" | ").toStdString();
}

// Steps 0..last with the value `at(step)` at each.
template <typename ValueAt>
void showSeries(SeriesPlot& plot, int last, ValueAt at)
{
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (int i = 0; i <= last; ++i) {
        steps.push_back(i);
        values.push_back(at(i));
    }
    plot.setSeries(steps, values);
}
} // namespace

TEST(AxisLabels, ALogAxisOfALossFrom20To600LabelsTicksBelow100)
{
    SeriesPlot plot("loss");
    showSeries(plot, 100, [](int i) { return 20.0 + 5.8 * i; });
    plot.setLogScale(true);
    const Ticks ticks = drawnTicks(plot, plot.plot()->yAxis);
    int below100 = 0;
    for (int i = 0; i < ticks.at.size(); ++i)
        if (ticks.at[i] >= 20 && ticks.at[i] < 100 && !ticks.labels[i].isEmpty())
            ++below100;
    EXPECT_GE(below100, 1) << "labels: " << joined(ticks.labels);
    EXPECT_GE(ticks.at.size(), 4) << joined(ticks.labels);
    EXPECT_TRUE(allDifferent(ticks.labels)) << joined(ticks.labels);
    EXPECT_TRUE(ticks.labels.contains("50") || ticks.labels.contains("20")) << joined(ticks.labels);
}

TEST(AxisLabels, ALogAxisOverManyDecadesReadsPowersOfTenWithoutCrowding)
{
    SeriesPlot plot("grad_norm");
    showSeries(plot, 30, [](int i) { return std::pow(10.0, i); }); // a blow-up: thirty decades
    plot.setLogScale(true);
    const Ticks ticks = drawnTicks(plot, plot.plot()->yAxis);
    EXPECT_GE(ticks.at.size(), 3) << joined(ticks.labels);
    EXPECT_LE(ticks.at.size(), 12) << "thirty decades are not thirty labels: " << joined(ticks.labels);
    for (double tick : ticks.at)
        EXPECT_NEAR(std::log10(tick), std::round(std::log10(tick)), 1e-9) << "a power of ten: " << tick;
}

TEST(AxisLabels, ALearningRateThatBarelyDecaysReadsDifferentNumbersAtEachTick)
{
    SeriesPlot plot("lr");
    showSeries(plot, 100, [](int i) { return 0.05 - 1e-7 * i; }); // 0.05 to 0.04999
    const Ticks ticks = drawnTicks(plot, plot.plot()->yAxis);
    ASSERT_GE(ticks.labels.size(), 3) << joined(ticks.labels);
    EXPECT_TRUE(allDifferent(ticks.labels)) << joined(ticks.labels);
    for (int i = 0; i < ticks.at.size(); ++i)
        EXPECT_NEAR(ticks.labels[i].toDouble(), ticks.at[i], 1e-9) << "a label reads its own tick: " << joined(ticks.labels);
}

TEST(AxisLabels, DistinguishingPrecisionAddsOnlyTheDigitsNeighboursNeed)
{
    EXPECT_EQ(ValueAxisTicker::distinguishingPrecision({0.1, 0.2, 0.3}, 4), 4);
    EXPECT_EQ(ValueAxisTicker::distinguishingPrecision({0.049998, 0.05, 0.050002}, 4), 5);
    EXPECT_EQ(ValueAxisTicker::distinguishingPrecision({1000001, 1000002}, 4), 7);
}

TEST(AxisLabels, ARunOfLessThanASecondHasWallTimeTicksThatDiffer)
{
    SeriesPlot plot("loss");
    std::vector<int64_t> steps;
    std::vector<double> loss, wall;
    for (int i = 0; i <= 200; ++i) {
        steps.push_back(i);
        loss.push_back(1.0 / (1 + i));
        wall.push_back(1.7e9 + 0.002 * i); // 0.4 s in all, as a demo run takes
    }
    plot.setSeries(steps, loss);
    std::string why;
    auto axis = StepAxis::fromSeries(StepAxisKind::WallTime, steps, wall, &why);
    ASSERT_TRUE(axis) << why;
    plot.setStepAxis(std::make_shared<const StepAxis>(*axis));
    const Ticks ticks = drawnTicks(plot, plot.plot()->xAxis);
    EXPECT_GE(ticks.labels.size(), 3) << joined(ticks.labels);
    EXPECT_TRUE(allDifferent(ticks.labels)) << joined(ticks.labels);
    EXPECT_TRUE(ticks.labels.contains("0.1s") || ticks.labels.contains("0.2s")) << joined(ticks.labels);
}
