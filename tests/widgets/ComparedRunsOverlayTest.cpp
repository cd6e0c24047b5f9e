// Compared runs in the overview: a second run is a second graph in its own colour with a legend
// entry, a click on that entry hides the run on every plot and a second click shows it again, and
// clearing gives the plots back as they were.

#include "widgets/ComparedRunsOverlay.h"
#include "widgets/ComparisonView.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QTreeWidget>
#include <QtTest/QTest>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

StepSeries line(int steps, double start, double slope)
{
    StepSeries s;
    for (int i = 0; i < steps; ++i) {
        s.steps.push_back(i);
        s.values.push_back(start + slope * i);
    }
    return s;
}

// Run A in the view; the comparison holds A and B (B logs loss and grad_norm, 50 steps longer).
RunComparison showTwoRuns(OverviewView& view)
{
    const StepSeries loss = line(100, 5, -0.01);
    const StepSeries grad = line(100, 1, 0.01);
    view.setScalars(loss.steps, {{"loss", loss.values}, {"grad_norm", grad.values}}, {});
    ComparedRun a, b;
    a.label = "/runs/a";
    a.scan.runName = "a";
    a.scan.lastStep = 99;
    a.series = {{"loss", loss}, {"grad_norm", grad}};
    b.label = "/runs/b";
    b.scan.runName = "b";
    b.scan.lastStep = 149;
    b.series = {{"loss", line(150, 6, 0.02)}, {"grad_norm", line(150, 1, 0.5)}};
    auto comparison = compareRuns({a, b});
    EXPECT_TRUE(comparison.ok()) << comparison.error();
    return *comparison;
}

// Clicks the legend entry of `graph` the way a user does: press and release on its text.
void clickLegendEntry(QCustomPlot* plot, QCPGraph* graph)
{
    plot->replot(); // lays the legend out
    QCPPlottableLegendItem* entry = plot->legend->itemWithPlottable(graph);
    ASSERT_NE(entry, nullptr);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, entry->rect().center());
}

} // namespace

TEST(ComparedRunsOverlay, ASecondRunIsASecondColouredGraphWithALegendEntryThatHidesItOnClick)
{
    OverviewView view;
    view.resize(1000, 900);
    view.show();
    const RunComparison comparison = showTwoRuns(view);
    ComparedRunsOverlay overlay(&view);
    overlay.show(comparison);

    SeriesPlot* loss = view.plot("loss");
    SeriesPlot* grad = view.plot("grad_norm");
    QCPGraph* lossB = overlay.graph(loss, 1);
    ASSERT_NE(lossB, nullptr);
    EXPECT_EQ(lossB->dataCount(), 150);
    EXPECT_EQ(lossB->pen().color(), ComparedRunsOverlay::runColour(1));
    EXPECT_NE(lossB->pen().color(), overlay.graph(loss, 0)->pen().color());
    // The legend names both runs, with no entries for the plot's marker graphs.
    ASSERT_TRUE(loss->plot()->legend->visible());
    EXPECT_NE(loss->plot()->legend->itemWithPlottable(lossB), nullptr);
    EXPECT_EQ(lossB->name(), "B: b");
    EXPECT_EQ(overlay.graph(loss, 0)->name(), "A: a");
    EXPECT_EQ(loss->plot()->legend->itemCount(), 2);
    // The value axis reaches the compared run's values (B's loss reaches 8.98, A's only 5).
    EXPECT_GE(loss->plot()->yAxis->range().upper, 8.98);

    clickLegendEntry(loss->plot(), lossB);
    EXPECT_FALSE(overlay.runVisible(1));
    EXPECT_FALSE(lossB->visible());
    EXPECT_FALSE(overlay.graph(grad, 1)->visible()); // hidden on every plot
    EXPECT_TRUE(overlay.graph(loss, 0)->visible());
    clickLegendEntry(grad->plot(), overlay.graph(grad, 1));
    EXPECT_TRUE(overlay.runVisible(1));
    EXPECT_TRUE(lossB->visible());

    // The plot's own run toggles the same way.
    clickLegendEntry(loss->plot(), overlay.graph(loss, 0));
    EXPECT_FALSE(overlay.runVisible(0));
    EXPECT_FALSE(overlay.graph(grad, 0)->visible());

    const int ownGraphs = loss->ownGraphCount();
    overlay.clear();
    EXPECT_EQ(loss->plot()->graphCount(), ownGraphs);
    EXPECT_TRUE(loss->plot()->graph(0)->visible());
    EXPECT_EQ(loss->plot()->graph(0)->name(), loss->title());
    EXPECT_EQ(overlay.graph(loss, 1), nullptr);
}

// A plot the user adds from the Series menu after comparing shows the compared runs as well, and
// hiding a run hides it there too.
TEST(ComparedRunsOverlay, APlotAddedLaterShowsTheComparedRunsToo)
{
    OverviewView view;
    view.resize(1000, 900);
    view.show();
    RunComparison comparison = showTwoRuns(view);
    const StepSeries seriesA = line(100, 0.5, 0.001), seriesB = line(150, 0.4, 0.002);
    view.setSeriesTables({SeriesTable{"eval", seriesA.steps, {{"eval_accuracy", seriesA.values}}}});
    comparison.runs[1].series["eval_accuracy"] = seriesB;
    ComparedRunsOverlay overlay(&view);
    overlay.show(comparison);
    overlay.setRunVisible(1, false);

    SeriesPlot* accuracy = view.addSeriesPlot("eval/eval_accuracy");
    ASSERT_NE(accuracy, nullptr);
    QCPGraph* accuracyB = overlay.graph(accuracy, 1);
    ASSERT_NE(accuracyB, nullptr) << "the compared run is drawn on the new plot";
    EXPECT_EQ(accuracyB->dataCount(), 150);
    EXPECT_EQ(accuracyB->name(), "B: b");
    EXPECT_FALSE(accuracyB->visible()) << "a run hidden before stays hidden on the new plot";
    EXPECT_TRUE(accuracy->plot()->legend->visible());
    clickLegendEntry(accuracy->plot(), accuracyB);
    EXPECT_TRUE(overlay.runVisible(1));
    EXPECT_TRUE(overlay.graph(view.plot("loss"), 1)->visible()) << "its legend toggles the run everywhere";

    overlay.clear();
    EXPECT_EQ(accuracy->plot()->graphCount(), accuracy->ownGraphCount());
    // After clearing, a newly added plot gets nothing.
    view.removeSeriesPlot("eval/eval_accuracy");
    SeriesPlot* again = view.addSeriesPlot("eval/eval_accuracy");
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->plot()->graphCount(), again->ownGraphCount());
}

TEST(ComparisonView, ListsEachRunsDivergenceAndIncidentsAndSelectsTheirSteps)
{
    OverviewView overview;
    RunComparison comparison = showTwoRuns(overview);
    Incident blowup;
    blowup.kind = IncidentKind::Blowup;
    blowup.severity = Severity::Critical;
    blowup.onsetStep = 120;
    comparison.runs[1].scan.incidents = {blowup};
    comparison.pairs[0].incidents = compareIncidents(comparison.runs[0].scan, comparison.runs[1].scan, 20);

    ComparisonView view;
    view.setComparison(comparison);
    QTreeWidget* tree = view.tree();
    ASSERT_EQ(tree->topLevelItemCount(), 1);
    QTreeWidgetItem* top = tree->topLevelItem(0);
    EXPECT_TRUE(top->text(0).startsWith("B: b")) << top->text(0).toStdString();
    ASSERT_EQ(top->childCount(), 3); // divergence, incidents, the note on their lengths
    QTreeWidgetItem* incidents = top->child(1);
    ASSERT_EQ(incidents->childCount(), 1);
    EXPECT_TRUE(incidents->child(0)->text(2).contains("only in B")) << incidents->child(0)->text(2).toStdString();

    qint64 selected = -1;
    QObject::connect(&view, &ComparisonView::stepActivated, [&](qint64 step) { selected = step; });
    emit tree->itemActivated(incidents->child(0), 0);
    EXPECT_EQ(selected, 120);
}
