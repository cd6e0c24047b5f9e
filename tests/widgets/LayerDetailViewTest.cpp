// The Layer tab shows the open run only (issue 27): after a run with logged activations, a run
// without them (a Trainer or Lightning log) showed the previous run's activation-range bands.
#include "widgets/LayerDetailView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <gtest/gtest.h>

using namespace nanscope;

TEST(LayerDetailView, ClearingLeavesNoActivationBandOfThePreviousRun)
{
    LayerDetailView view;
    LayerDetail withActivations;
    withActivations.layer = "fc1.weight";
    withActivations.module = "fc1";
    withActivations.steps = {0, 1, 2};
    withActivations.gradNorm = {1, 2, 3};
    withActivations.activationSteps = {0, 1, 2};
    withActivations.activationMin = {-1, -2, -3};
    withActivations.activationMax = {1, 2, 3};
    withActivations.activationMean = {0, 0, 0};
    withActivations.activationStd = {1, 1, 1};
    withActivations.activationNan = {0, 0, 0};
    withActivations.activationInf = {0, 0, 0};
    view.setDetail(withActivations);
    QCustomPlot* activation = nullptr;
    for (SeriesPlot* plot : view.findChildren<SeriesPlot*>())
        if (plot->plot()->graphCount() > plot->ownGraphCount())
            activation = plot->plot();
    ASSERT_NE(activation, nullptr) << "the range bands were drawn";
    view.clear();
    for (SeriesPlot* plot : view.findChildren<SeriesPlot*>()) {
        EXPECT_EQ(plot->plot()->graphCount(), plot->ownGraphCount()) << "a band of the previous run is left";
        for (int g = 0; g < plot->plot()->graphCount(); ++g)
            EXPECT_EQ(plot->plot()->graph(g)->dataCount(), 0) << "data of the previous run is left";
    }
}

// An expert that did not run at steps 1 and 3 (no token routed to it): its cells there hold no
// element (NaN figures, zero counts). They are no point of the activation plot and no NaN mark;
// step 2's output, all NaN (a non-zero count), is one.
TEST(LayerDetailView, StepsWhereTheModuleDidNotRunAreNoPointAndNoNanMark)
{
    LayerDetailView view;
    LayerDetail detail;
    detail.layer = "experts.1.fc1.weight";
    detail.module = "experts.1.fc1";
    detail.steps = {0, 1, 2, 3, 4};
    detail.gradNorm = {1, 0, 1, 0, 1};
    detail.activationSteps = {0, 1, 2, 3, 4};
    detail.activationMin = {-1, NAN, NAN, NAN, -1};
    detail.activationMax = {1, NAN, NAN, NAN, 1};
    detail.activationMean = {0.5, NAN, NAN, NAN, 0.5};
    detail.activationStd = {1, NAN, NAN, NAN, 1};
    detail.activationNan = {0, 0, 64, 0, 0};
    detail.activationInf = {0, 0, 0, 0, 0};
    view.setDetail(detail);
    SeriesPlot* activation = nullptr;
    for (SeriesPlot* plot : view.findChildren<SeriesPlot*>())
        if (plot->plot()->graphCount() > plot->ownGraphCount())
            activation = plot;
    ASSERT_NE(activation, nullptr);
    EXPECT_EQ(activation->nanCount(), 1) << "only step 2's all-NaN output is a NaN mark";
    EXPECT_EQ(activation->plot()->graph(0)->dataCount(), 3) << "steps 0, 2 (a gap) and 4";
    // The bands' lower edges are no entries of the legend (they read "Graph 11", "Graph 13").
    activation->plot()->replot();
    for (const QString& name : activation->legendNames())
        EXPECT_FALSE(name.startsWith("Graph")) << name.toStdString();
}
