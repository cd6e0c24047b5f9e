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
