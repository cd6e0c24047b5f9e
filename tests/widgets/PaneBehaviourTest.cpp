// Small behaviours of the panes that a user noticed were missing (issue 17, window bugs 6 and 7).
#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/ReplayView.h"
#include "widgets/SeriesPlot.h"
#include "widgets/TensorStatsModel.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

using namespace nanscope;

TEST(ReplayView, EnterInTheLayerFieldReplays)
{
    ReplayView view;
    view.setReplayableSteps({100, 180});
    view.chooseStepNear(180);
    QSignalSpy requested(&view, &ReplayView::replayRequested);
    QLineEdit* layer = view.findChild<QLineEdit*>();
    ASSERT_NE(layer, nullptr);
    layer->setText("norm");
    QTest::keyClick(layer, Qt::Key_Return);
    ASSERT_EQ(requested.count(), 1) << "Enter in the Layer field did nothing";
    const auto request = requested.first().first().value<ReplayRequest>();
    EXPECT_EQ(request.layerPrefix, "norm");
    EXPECT_EQ(request.step, 180);
}

TEST(BatchNormView, LegendNamesTheMaxAndMinSeries)
{
    BatchNormView view;
    BatchNormSeries series;
    series.name = "bn1";
    series.steps = {0, 1, 2};
    series.meanMin = {-1, -1, -1};
    series.meanMax = {1, 1, 1};
    series.varMin = {0.5, 0.5, 0.5};
    series.varMax = {2, 2, 2};
    series.nonfinite = {0, 0, 0};
    view.setSeries({series});
    for (SeriesPlot* plot : {view.meanPlot(), view.varPlot()}) {
        EXPECT_EQ(plot->plot()->graph(0)->name(), "max") << "the max series was named after the whole plot";
        EXPECT_EQ(plot->plot()->graph(1)->name(), "min");
    }
}

TEST(CheckpointsView, SaysItIsReadingInsteadOfShowingTheOldCheckpoint)
{
    CheckpointsView view;
    view.setCheckpointSteps({100, 200});
    CheckpointTensor row;
    row.stats.name = "fc1.weight";
    row.stats.numel = 4;
    view.setTensors(100, {row}, QString());
    ASSERT_EQ(view.model()->rowCount(), 1);
    QSignalSpy requested(&view, &CheckpointsView::checkpointRequested);
    view.chooseStepNear(200);
    ASSERT_EQ(requested.count(), 1);
    EXPECT_EQ(view.model()->rowCount(), 0) << "step 100's tensors stayed up while step 200 was read";
    bool saysReading = false;
    for (QLabel* label : view.findChildren<QLabel*>())
        saysReading |= label->text().contains("Reading the checkpoint of step 200");
    EXPECT_TRUE(saysReading);
}
