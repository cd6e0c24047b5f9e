// The habits users bring from TensorBoard and W&B: smoothing, a readout of every plot at the
// cursor, any logged series as a plot, CSV export, box zoom.

#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"
#include "widgets/Smoothing.h"
#include "widgets/StepAxisTicker.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QStandardItemModel>
#include <QTemporaryDir>

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The graph the raw series is drawn with behind the smoothed line: the first on the "raw" layer
// (the second is the overlay's).
QCPGraph* rawGraph(SeriesPlot& plot)
{
    for (int i = 0; i < plot.plot()->graphCount(); ++i)
        if (plot.plot()->graph(i)->layer()->name() == "raw")
            return plot.plot()->graph(i);
    return nullptr;
}

std::vector<double> yValues(QCPGraph* graph)
{
    std::vector<double> y;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        y.push_back(it->value);
    return y;
}

void sendMouse(QWidget* widget, QEvent::Type type, QPoint at, Qt::MouseButton button, Qt::MouseButtons held,
               Qt::KeyboardModifiers modifiers)
{
    QMouseEvent event(type, QPointF(at), widget->mapToGlobal(QPointF(at)), button, held, modifiers);
    QApplication::sendEvent(widget, &event);
}

// Loss, grad norm and the epoch every step 0..100; an evaluation every 20 steps.
void showRun(OverviewView& view)
{
    std::vector<int64_t> steps;
    std::vector<double> loss, grad, epoch;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        loss.push_back(10.0 - 0.05 * i);
        grad.push_back(1.0 + i);
        epoch.push_back(i / 50.0);
    }
    view.setScalars(steps, {{"loss", loss}, {"grad_norm", grad}, {"epoch", epoch}}, {});
    view.setSeriesTables({SeriesTable{"eval", {20, 40, 60, 80, 100},
                                      {{"eval_loss", {9, 8, 7, 6, 5}}, {"eval_accuracy", {0.5, 0.6, 0.7, 0.8, 0.9}}}}});
}
} // namespace

TEST(Smoothing, MatchesTensorBoardsDebiasedMovingAverage)
{
    // By hand, weight 0.5: last = 0.5, debiased 0.5/0.5 = 1; last = 1.25, /0.75 = 5/3;
    // NaN passes through untouched; last = 2.625, /0.875 = 3 (the NaN was not counted).
    const std::vector<double> smoothed = smoothEma({1, 2, kNaN, 4, kInf}, 0.5);
    ASSERT_EQ(smoothed.size(), 5u);
    EXPECT_DOUBLE_EQ(smoothed[0], 1.0) << "debiasing: the first point is not pulled towards zero";
    EXPECT_DOUBLE_EQ(smoothed[1], 5.0 / 3.0);
    EXPECT_TRUE(std::isnan(smoothed[2])) << "a NaN is never smoothed away";
    EXPECT_DOUBLE_EQ(smoothed[3], 3.0) << "a NaN does not poison the points after it";
    EXPECT_EQ(smoothed[4], kInf);
    EXPECT_EQ(smoothEma({1, 2, 3}, 0), (std::vector<double>{1, 2, 3})) << "weight 0 is the raw series";
    EXPECT_EQ(smoothEma({0.1, 0.1, 0.1}, 0.9), (std::vector<double>{0.1, 0.1, 0.1})) << "a constant stays exact";
}

TEST(SeriesPlot, SmoothingDrawsTheRawSeriesFaintBehindAndNaNStaysMarked)
{
    SeriesPlot plot("loss");
    plot.setSeries({0, 1, 2, 3, 4}, {1, 2, kNaN, 4, 100});
    ASSERT_TRUE(rawGraph(plot));
    EXPECT_FALSE(rawGraph(plot)->visible()) << "no faint copy without smoothing";
    plot.setSmoothing(0.5);
    EXPECT_EQ(plot.nanCount(), 1) << "the NaN is still marked under smoothing";
    QCPGraph* line = plot.plot()->graph(0);
    const std::vector<double> drawn = yValues(line);
    ASSERT_EQ(drawn.size(), 5u);
    EXPECT_DOUBLE_EQ(drawn[1], 5.0 / 3.0) << "the line is the smoothed series";
    EXPECT_TRUE(std::isnan(drawn[2])) << "and has a gap at the NaN, not a made-up value";
    QCPGraph* raw = rawGraph(plot);
    EXPECT_TRUE(raw->visible());
    EXPECT_DOUBLE_EQ(yValues(raw)[1], 2.0) << "the raw series is drawn behind";
    EXPECT_LT(raw->pen().color().alpha(), 128) << "faint";
    EXPECT_LT(plot.plot()->layer("raw")->index(), line->layer()->index()) << "behind the smoothed line";
    EXPECT_GE(plot.plot()->yAxis->range().upper, 100) << "the raw spike stays inside the value axis";
    plot.setSmoothing(0);
    EXPECT_DOUBLE_EQ(yValues(line)[1], 2.0);
    EXPECT_FALSE(raw->visible());
}

TEST(OverviewView, OneSliderSmoothsEveryPlotIncludingAddedOnes)
{
    OverviewView view;
    showRun(view);
    SeriesPlot* epoch = view.addSeriesPlot("epoch");
    ASSERT_TRUE(epoch);
    view.setSmoothing(0.6);
    for (SeriesPlot* plot : view.plots())
        EXPECT_DOUBLE_EQ(plot->smoothing(), 0.6) << plot->title().toStdString();
    EXPECT_DOUBLE_EQ(view.smoothing(), 0.6);
    SeriesPlot* accuracy = view.addSeriesPlot("eval/eval_accuracy");
    EXPECT_DOUBLE_EQ(accuracy->smoothing(), 0.6) << "a plot added later is smoothed as the others";
    EXPECT_DOUBLE_EQ(accuracy->smoothedValues()[1], smoothEma({0.5, 0.6, 0.7, 0.8, 0.9}, 0.6)[1]);
}

TEST(OverviewView, AnyLoggedSeriesCanBeAddedAsAPlotOnTheLinkedStepAxis)
{
    OverviewView view;
    showRun(view);
    const QStringList offered = view.addableSeries();
    EXPECT_TRUE(offered.contains("epoch"));
    EXPECT_TRUE(offered.contains("eval/eval_accuracy"));
    EXPECT_TRUE(offered.contains("eval/eval_loss"));
    EXPECT_FALSE(offered.contains("loss")) << "the fixed plots are always there, not offered again";
    EXPECT_EQ(view.addSeriesPlot("eval/no_such_metric"), nullptr);

    SeriesPlot* accuracy = view.addSeriesPlot("eval/eval_accuracy");
    ASSERT_TRUE(accuracy);
    EXPECT_EQ(view.plot("eval/eval_accuracy"), accuracy);
    EXPECT_EQ(view.addSeriesPlot("eval/eval_accuracy"), accuracy) << "added once";
    EXPECT_EQ(accuracy->title(), "eval_accuracy (eval)");
    QCPGraph* line = accuracy->plot()->graph(0);
    ASSERT_EQ(line->dataCount(), 5);
    EXPECT_DOUBLE_EQ(line->data()->at(0)->key, 20);
    EXPECT_DOUBLE_EQ(line->data()->at(4)->value, 0.9);

    // One step axis: zooming the added plot moves the fixed ones, and back.
    accuracy->plot()->xAxis->setRange(30, 70);
    EXPECT_DOUBLE_EQ(view.plot("loss")->plot()->xAxis->range().lower, 30);
    view.plot("grad_norm")->plot()->xAxis->setRange(10, 50);
    EXPECT_DOUBLE_EQ(accuracy->plot()->xAxis->range().upper, 50);

    // The eval loss stays the loss plot's overlay as well.
    EXPECT_TRUE(view.plot("loss")->plot()->graph(1)->visible());

    // A run switch keeps the choice: the next run that logs it shows it, one that does not hides it.
    view.clear();
    view.setScalars({0, 1}, {{"loss", {1, 2}}}, {});
    view.setSeriesTables({});
    EXPECT_TRUE(view.plot("eval/eval_accuracy")->isHidden());
    showRun(view);
    EXPECT_FALSE(view.plot("eval/eval_accuracy")->isHidden());

    view.removeSeriesPlot("eval/eval_accuracy");
    EXPECT_EQ(view.plot("eval/eval_accuracy"), nullptr);
    view.removeSeriesPlot("loss");
    EXPECT_TRUE(view.plot("loss")) << "the fixed plots cannot be removed";
}

TEST(OverviewView, HoveringOnePlotShowsEveryPlotsValueAtThatStep)
{
    OverviewView view;
    view.resize(900, 900);
    showRun(view);
    SeriesPlot* accuracy = view.addSeriesPlot("eval/eval_accuracy");
    view.show();
    for (SeriesPlot* plot : view.plots())
        plot->plot()->replot();
    QCustomPlot* loss = view.plot("loss")->plot();
    const QPoint atStep41(int(loss->xAxis->coordToPixel(41)), loss->axisRect()->center().y());
    sendMouse(loss, QEvent::MouseMove, atStep41, Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    EXPECT_EQ(view.plot("loss")->readoutText().toStdString(), "step 41   loss = 7.95   eval loss = 8 (step 40)");
    EXPECT_EQ(view.plot("grad_norm")->readoutText().toStdString(), "step 41   grad norm = 42");
    EXPECT_EQ(accuracy->readoutText().toStdString(), "step 40   eval_accuracy (eval) = 0.6")
        << "a series logged every 20 steps reads at its nearest logged step";
    view.setSmoothing(0.5);
    EXPECT_TRUE(view.plot("grad_norm")->readoutText().startsWith("step 41   grad norm = 42  (smoothed "))
        << view.plot("grad_norm")->readoutText().toStdString();
}

// The step axis labelled in epochs or wall time, where the run logs them: the plots stay aligned by
// step, ticks sit where each epoch (or each round time) begins, and the readout names both.
TEST(OverviewView, WallTimeAndEpochAreOtherXAxesWhereLogged)
{
    OverviewView view;
    view.resize(900, 900);
    showRun(view);
    view.show();
    auto* choice = view.findChild<QComboBox*>("overview.xAxis");
    ASSERT_NE(choice, nullptr);
    auto* items = qobject_cast<QStandardItemModel*>(choice->model());
    ASSERT_NE(items, nullptr);
    EXPECT_FALSE(items->item(1)->isEnabled()) << "no wall time logged yet";
    EXPECT_FALSE(view.setStepAxisKind(StepAxisKind::Epoch)) << "no axes given yet";
    EXPECT_EQ(view.stepAxisKind(), StepAxisKind::Step);

    // The epoch logged every step (0.02 a step); the wall time 10 s a step with a 30-minute pause
    // after step 60.
    std::vector<int64_t> steps;
    std::vector<double> epoch, wall;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        epoch.push_back(i / 50.0);
        wall.push_back(1.7e9 + 10.0 * i + (i > 60 ? 1800.0 : 0.0));
    }
    StepAxes axes;
    axes.epoch = StepAxis::fromSeries(StepAxisKind::Epoch, steps, epoch);
    axes.wallTime = StepAxis::fromSeries(StepAxisKind::WallTime, steps, wall);
    view.setStepAxes(axes);
    EXPECT_TRUE(items->item(1)->isEnabled());
    EXPECT_TRUE(items->item(2)->isEnabled());
    EXPECT_EQ(view.stepAxisKind(), StepAxisKind::Epoch) << "the choice made before is kept";
    EXPECT_EQ(choice->currentText(), "Epoch");

    QCustomPlot* loss = view.plot("loss")->plot();
    loss->replot();
    const QVector<double> ticks = loss->xAxis->tickVector();
    const QVector<QString> labels = loss->xAxis->tickVectorLabels();
    ASSERT_TRUE(labels.contains("epoch 1")) << labels.join(", ").toStdString();
    EXPECT_DOUBLE_EQ(ticks[labels.indexOf("epoch 1")], 50.0) << "epoch 1 begins at step 50";
    EXPECT_DOUBLE_EQ(loss->xAxis->range().upper, view.plot("grad_norm")->plot()->xAxis->range().upper)
        << "the plots stay on one step axis";

    // An added plot gets the axis too; the readout names the epoch at the step.
    SeriesPlot* accuracy = view.addSeriesPlot("eval/eval_accuracy");
    accuracy->plot()->replot();
    EXPECT_TRUE(accuracy->plot()->xAxis->tickVectorLabels().contains("epoch 1"));
    view.showReadoutAt(75);
    EXPECT_EQ(view.plot("grad_norm")->readoutText().toStdString(), "step 75 (epoch 1.5)   grad norm = 76");

    // Wall time: ticks at round times since the first step; the pause crowds them, never overprints.
    choice->setCurrentIndex(1);
    emit choice->activated(1);
    EXPECT_EQ(view.stepAxisKind(), StepAxisKind::WallTime);
    loss->replot();
    const QVector<double> timeTicks = loss->xAxis->tickVector();
    const QVector<QString> timeLabels = loss->xAxis->tickVectorLabels();
    ASSERT_GE(timeTicks.size(), 3) << timeLabels.join(", ").toStdString();
    for (int i = 1; i < timeTicks.size(); ++i)
        EXPECT_GT(timeTicks[i] - timeTicks[i - 1], 3.0) << timeLabels.join(", ").toStdString();
    for (const QString& label : timeLabels)
        EXPECT_TRUE(label.contains('m') || label.endsWith('s')) << label.toStdString();
    view.showReadoutAt(61);
    EXPECT_EQ(view.plot("grad_norm")->readoutText().toStdString(), "step 61 (40m 10s)   grad norm = 62");

    // A run without these series shows steps again; the choice comes back with a run that logs them.
    view.setStepAxes(StepAxes{});
    EXPECT_EQ(view.stepAxisKind(), StepAxisKind::Step);
    EXPECT_EQ(choice->currentText(), "Step");
    EXPECT_EQ(view.plot("loss")->stepAxis(), nullptr);
    view.setStepAxes(axes);
    EXPECT_EQ(view.stepAxisKind(), StepAxisKind::WallTime);
}

TEST(StepAxisTicker, PicksRoundSpacingsInTheAxisUnit)
{
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::Epoch, 30, 5), 10);
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::Epoch, 0.9, 5), 0.2);
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::WallTime, 3000, 5), 600) << "every 10 minutes";
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::WallTime, 40000, 5), 10800) << "every 3 hours";
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::WallTime, 20, 5), 5);
    EXPECT_DOUBLE_EQ(StepAxisTicker::tickSpacing(StepAxisKind::WallTime, 0.4, 5), 0.1) << "a run under a second";
}

TEST(SeriesPlot, ExportsItsDataAsCsvWithTheSmoothedColumn)
{
    SeriesPlot plot("loss");
    plot.setSeries({10, 20, 30, 40, 50}, {1, 2, kNaN, 4, -kInf});
    plot.setSmoothing(0.5);
    QTemporaryDir dir;
    const QString path = dir.filePath("loss.csv");
    ASSERT_TRUE(plot.exportCsv(path));
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(file.readAll()).toStdString(),
              "step,value,smoothed\n"
              "10,1,1\n"
              "20,2,1.6666666666666667\n"
              "30,nan,nan\n"
              "40,4,3\n"
              "50,-inf,-inf\n");
    QString error;
    EXPECT_FALSE(plot.exportCsv(dir.filePath("no/such/folder/loss.csv"), &error));
    EXPECT_TRUE(error.contains("no/such/folder")) << error.toStdString();
}

TEST(SeriesPlot, CtrlDragZoomsIntoABoxAndTheLinkedPlotsFollow)
{
    OverviewView view;
    view.resize(900, 900);
    showRun(view);
    view.show();
    for (SeriesPlot* plot : view.plots())
        plot->plot()->replot();
    SeriesPlot* grad = view.plot("grad_norm");
    grad->setLogScale(false);
    QCustomPlot* canvas = grad->plot();
    canvas->replot();
    const QCPRange valuesBefore = canvas->yAxis->range();
    const QPoint from(int(canvas->xAxis->coordToPixel(20)), int(canvas->yAxis->coordToPixel(60)));
    const QPoint to(int(canvas->xAxis->coordToPixel(60)), int(canvas->yAxis->coordToPixel(20)));
    sendMouse(canvas, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton, Qt::ControlModifier);
    sendMouse(canvas, QEvent::MouseMove, (from + to) / 2, Qt::NoButton, Qt::LeftButton, Qt::ControlModifier);
    sendMouse(canvas, QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton, Qt::ControlModifier);
    sendMouse(canvas, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton, Qt::ControlModifier);
    const QCPRange steps = canvas->xAxis->range();
    EXPECT_NEAR(steps.lower, 20, 0.5);
    EXPECT_NEAR(steps.upper, 60, 0.5);
    EXPECT_NEAR(canvas->yAxis->range().lower, 20, 0.5) << "the box zooms the values too";
    EXPECT_NEAR(canvas->yAxis->range().upper, 60, 0.5);
    const QCPRange lossSteps = view.plot("loss")->plot()->xAxis->range();
    EXPECT_DOUBLE_EQ(lossSteps.lower, steps.lower) << "the linked step axis followed the box";
    EXPECT_DOUBLE_EQ(lossSteps.upper, steps.upper);

    // A plain drag still pans the steps, and leaves the values alone.
    sendMouse(canvas, QEvent::MouseButtonPress, to, Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
    sendMouse(canvas, QEvent::MouseMove, to - QPoint(40, 40), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    sendMouse(canvas, QEvent::MouseButtonRelease, to - QPoint(40, 40), Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
    EXPECT_NEAR(canvas->yAxis->range().upper, 60, 0.5);
    EXPECT_GT(canvas->xAxis->range().lower, steps.lower) << "dragged leftwards: later steps in view";

    view.resetZoom();
    EXPECT_DOUBLE_EQ(canvas->xAxis->range().lower, 0);
    EXPECT_DOUBLE_EQ(canvas->xAxis->range().upper, 100);
    EXPECT_DOUBLE_EQ(view.plot("loss")->plot()->xAxis->range().upper, 100);
    EXPECT_DOUBLE_EQ(canvas->yAxis->range().upper, valuesBefore.upper) << "reset zoom fits the values again";
}
