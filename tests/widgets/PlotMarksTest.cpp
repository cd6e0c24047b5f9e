// Every mark a plot draws is explained (issue 51, item 5): checkpoints were blue asterisks, captures
// purple dashed lines, skipped steps grey diamonds and +Inf orange triangles, and the legend named
// only the loss; hovering a mark showed the generic gesture tip.
#include "widgets/EventMarkers.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

TEST(PlotMarks, TheLegendNamesEveryKindOfMarkDrawnAndOnlyThose)
{
    SeriesPlot plot("loss");
    plot.setSeries({0, 1, 2, 3, 4, 5}, {1.0, 0.9, 0.8, 0.7, 0.6, 0.5});
    plot.plot()->replot();
    EXPECT_TRUE(plot.legendNames().isEmpty()) << "one line and no marks: nothing to explain";

    const double inf = std::numeric_limits<double>::infinity();
    plot.setSeries({0, 1, 2, 3, 4, 5}, {1.0, 0.9, inf, 0.7, std::nan(""), 0.5});
    plot.setMarkedSteps({4}, "skipped");
    plot.setCheckpointSteps({0, 3});
    plot.setTrendLine({0, 5}, {1.0, 0.5});
    plot.plot()->replot();
    const QStringList names = plot.legendNames();
    for (const char* name : {"loss", "NaN", "+Inf", "skipped", "checkpoint", "fitted trend"})
        EXPECT_TRUE(names.contains(name)) << name << " missing from " << names.join(", ").toStdString();
    EXPECT_FALSE(names.contains("-Inf")) << "no -Inf drawn, none named";
}

TEST(PlotMarks, HoveringAMarkNamesItsStepAndWhatHappened)
{
    SeriesPlot plot("loss");
    plot.setSeries({0, 10, 20, 30}, {1.0, std::nan(""), 0.8, 0.7});
    plot.setMarkedSteps({10}, "skipped");
    plot.setCheckpointSteps({20});
    const QStringList atTen = plot.marksNear(10, 1);
    EXPECT_TRUE(atTen.contains("step 10: loss is NaN")) << atTen.join(" | ").toStdString();
    EXPECT_TRUE(atTen.contains("step 10: optimizer step skipped")) << atTen.join(" | ").toStdString();
    EXPECT_TRUE(plot.marksNear(25, 1).isEmpty()) << "no mark near step 25";
    const QStringList atTwenty = plot.marksNear(20.4, 1);
    ASSERT_EQ(atTwenty.size(), 1);
    EXPECT_TRUE(atTwenty.front().startsWith("step 20: checkpoint saved")) << atTwenty.front().toStdString();

    plot.showReadoutAt(20);
    EXPECT_TRUE(plot.readoutText().contains("checkpoint saved")) << plot.readoutText().toStdString();
    plot.showReadoutAt(30);
    EXPECT_FALSE(plot.readoutText().contains("\u2014")) << plot.readoutText().toStdString();
}

TEST(PlotMarks, TheDefencesEventsAreNamedInTheLegendToo)
{
    OverviewView view;
    view.setScalars({0, 10, 20, 30}, {{"loss", {1.0, 0.9, 0.8, 0.7}}}, {});
    view.setTimelineEvents({{20, "incident_capture", "batches 10..20 and checkpoint 10 written"},
                            {30, "rollback", "weights of step 10 restored"}});
    SeriesPlot* loss = view.plot("loss");
    ASSERT_NE(loss, nullptr);
    loss->plot()->replot();
    const QStringList names = loss->legendNames();
    EXPECT_TRUE(names.contains("incident capture")) << names.join(", ").toStdString();
    EXPECT_TRUE(names.contains("rollback")) << names.join(", ").toStdString();
    EXPECT_FALSE(names.contains("buffers restored"));
}
