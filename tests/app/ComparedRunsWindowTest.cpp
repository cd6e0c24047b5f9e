// Compared runs in the window, as a user drives them: File > Compare With Run adds a run whose
// series overlay the open run's and whose differences a dock lists; a run that cannot be opened is
// named; Close Compared Runs gives the plots back.
#include "AppTestSupport.h"
#include "WindowTestSupport.h"

#include "app/window/ComparedRuns.h"
#include "widgets/ComparedRunsOverlay.h"
#include "widgets/ComparisonView.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>

#include <gtest/gtest.h>

#include <cmath>

using namespace nanscope;
using namespace nanscope::test;

TEST(ComparedRunsWindow, ACompareRunIsOverlaidAndItsDifferencesListed)
{
    MainWindow window;
    ComparedRuns* compared = window.comparedRuns();
    QSignalSpy done(compared, &ComparedRuns::comparisonDone);
    compared->addRun(demoRun("sudden-blowup")); // before the run: compared once it and its scan are in
    ASSERT_TRUE(openAndWait(window, demoRun("healthy")));
    ASSERT_TRUE(done.wait(60000));
    ASSERT_TRUE(done.first().first().toBool());

    const RunComparison& comparison = compared->comparison();
    ASSERT_EQ(comparison.runs.size(), 2u);
    SeriesPlot* grad = window.overview()->plot("grad_norm");
    QCPGraph* other = compared->overlay()->graph(grad, 1);
    ASSERT_NE(other, nullptr);
    EXPECT_GT(other->dataCount(), 200);
    EXPECT_EQ(other->pen().color(), ComparedRunsOverlay::runColour(1));
    EXPECT_TRUE(grad->plot()->legend->visible());
    QTreeWidget* tree = compared->view()->tree();
    ASSERT_EQ(tree->topLevelItemCount(), 1);
    EXPECT_TRUE(tree->topLevelItem(0)->text(0).contains("sudden-blowup")) << tree->topLevelItem(0)->text(0).toStdString();

    compared->closeRuns();
    EXPECT_EQ(compared->overlay()->graph(grad, 1), nullptr);
    EXPECT_EQ(tree->topLevelItemCount(), 0);
    EXPECT_FALSE(compared->hasRuns());
}

TEST(ComparedRunsWindow, ARunThatCannotBeOpenedIsNamedAndDropped)
{
    MainWindow window;
    ASSERT_TRUE(openAndWait(window, demoRun("healthy")));
    ASSERT_TRUE(waitForScan(window));
    ComparedRuns* compared = window.comparedRuns();
    QSignalSpy done(compared, &ComparedRuns::comparisonDone);
    QTemporaryDir empty;
    compared->addRun(empty.path());
    ASSERT_TRUE(done.wait(30000));
    EXPECT_FALSE(done.first().first().toBool());
    EXPECT_FALSE(compared->hasRuns());
    EXPECT_EQ(compared->overlay()->graph(window.overview()->plot("loss"), 1), nullptr);
}

// Issue 27: a comparison made on one run stayed overlaid when an unrelated run was opened, and
// after Close Compared Runs the plots kept the y range of the removed run.
TEST(ComparedRunsWindow, OpeningAnotherRunDropsTheComparisonAndClosingGivesTheRangeBack)
{
    MainWindow window;
    ComparedRuns* compared = window.comparedRuns();
    QSignalSpy done(compared, &ComparedRuns::comparisonDone);
    ASSERT_TRUE(openAndWait(window, demoRun("healthy")));
    SeriesPlot* loss = window.overview()->plot("loss");
    ASSERT_TRUE(waitForScan(window));
    loss->resetZoom();
    const QCPRange own = loss->plot()->yAxis->range();
    compared->addRun(demoRun("sudden-blowup"));
    ASSERT_TRUE(done.wait(60000));
    ASSERT_TRUE(compared->hasRuns());
    loss->plot()->rescaleAxes(); // the plot stretched to the other run's loss, as a user zooms out
    compared->closeRuns();
    const QCPRange after = loss->plot()->yAxis->range();
    EXPECT_NEAR(after.upper, own.upper, std::abs(own.upper) * 1e-6 + 1e-9) << "the range of the removed run stayed";

    compared->addRun(demoRun("sudden-blowup"));
    ASSERT_TRUE(done.wait(60000));
    ASSERT_TRUE(compared->hasRuns());
    ASSERT_TRUE(openAndWait(window, demoRun("division-by-zero")));
    EXPECT_FALSE(compared->hasRuns()) << "the comparison of another run stayed on the new one";
    EXPECT_EQ(compared->overlay()->graph(window.overview()->plot("loss"), 1), nullptr);
}

TEST(ComparedRunsWindow, TheDockOpensWideEnoughToReadAt1280x800)
{
    // Issue 27: split beside the incident list, the dock opened a few dozen pixels wide.
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(openAndWait(window, demoRun("healthy")));
    ComparedRuns* compared = window.comparedRuns();
    QSignalSpy done(compared, &ComparedRuns::comparisonDone);
    compared->addRun(demoRun("sudden-blowup"));
    ASSERT_TRUE(done.wait(60000));
    QCoreApplication::processEvents();
    auto* dock = window.findChild<QDockWidget*>("ComparedRunsDock");
    ASSERT_NE(dock, nullptr);
    EXPECT_TRUE(dock->isVisible());
    EXPECT_GE(dock->width(), 1280 / 3) << "the dock is " << dock->width() << " px wide";
    auto* incidents = window.findChild<QDockWidget*>("IncidentsDock");
    ASSERT_NE(incidents, nullptr);
    EXPECT_GE(incidents->width(), 1280 / 3) << "and the incident list beside it keeps room too";
}
