// Every mark a plot draws is explained (issue 51, item 5): checkpoints were blue asterisks, captures
// purple dashed lines, skipped steps grey diamonds and +Inf orange triangles, and the legend named
// only the loss; hovering a mark showed the generic gesture tip.
#include "widgets/EventMarkers.h"
#include "widgets/LayerDetailView.h"
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

// Issue 51, item 11: a NaN count logged every 5th step was drawn as a ramp between the samples.
TEST(PlotMarks, CountsAreBarsAtTheirStepsNotARamp)
{
    LayerDetailView view;
    LayerDetail detail;
    detail.layer = "fc1.weight";
    detail.activationSteps = {0, 5, 10};
    detail.activationNan = {0, 7, 0};
    detail.activationInf = {0, 0, 0};
    view.setDetail(detail);
    EXPECT_EQ(view.nonfinitePlot()->plot()->graph(0)->lineStyle(), QCPGraph::lsImpulse)
        << "the layer's NaN/Inf counts are drawn as bars";
    EXPECT_EQ(view.gradientPlot()->plot()->graph(0)->lineStyle(), QCPGraph::lsLine) << "norms stay lines";
}

// Issue 51, item 11: after a zoom under a still cursor the readout named the step of before.
TEST(PlotMarks, TheReadoutFollowsAZoomUnderTheCursor)
{
    SeriesPlot plot("loss");
    plot.resize(800, 300);
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        values.push_back(1.0 + i);
    }
    plot.setSeries(steps, values);
    plot.plot()->replot();
    QCPAxis* x = plot.plot()->xAxis;
    const double pixel = x->coordToPixel(80);
    plot.updateHover(pixel);
    EXPECT_TRUE(plot.readoutText().startsWith("step 80")) << plot.readoutText().toStdString();
    plot.setStepRange(0, 50); // zoomed in: another step is under the same pixel
    const qint64 under = std::llround(x->pixelToCoord(pixel));
    EXPECT_NE(under, 80);
    EXPECT_TRUE(plot.readoutText().startsWith(QString("step %1").arg(under))) << plot.readoutText().toStdString();
}

// Issue 51, item 11: the loss (blue) and the evaluation loss (green) were hard to tell apart.
TEST(PlotMarks, TheOverlayIsToldApartFromTheLineByMoreThanHue)
{
    SeriesPlot plot("loss");
    const QPen line = plot.plot()->graph(0)->pen();
    const QPen overlay = plot.plot()->graph(1)->pen();
    EXPECT_NE(overlay.style(), line.style()) << "dashed against solid, for colour-blind eyes and print";
    const auto lightness = [](const QColor& c) { return c.lightness(); };
    EXPECT_GT(std::abs(lightness(line.color()) - lightness(overlay.color())), 60);
}
