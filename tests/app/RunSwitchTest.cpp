// The window never shows one run's state beside another's: the RunContext closes the old run and
// every view drops what it showed (issue: the replay pane kept the old run's result, step and
// layer filter; a failed open showed its error next to the old run's layer tree and incidents).
#include "AppTestSupport.h"
#include "WindowTestSupport.h"

#include "app/window/MainWindow.h"
#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/HeatmapView.h"
#include "widgets/IncidentModel.h"
#include "widgets/LayerDetailView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OverviewView.h"
#include "widgets/ReplayOpModel.h"
#include "widgets/ReplayView.h"
#include "widgets/SeriesPlot.h"
#include "widgets/TensorStatsModel.h"

#include <QAction>
#include <qcustomplot.h>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace nanscope;

using test::openAndWait;

namespace {

bool treeNames(const LayerTreeModel& model, const QString& name)
{
    return model.indexOfParameter(name).isValid();
}
} // namespace

TEST(RunSwitch, OpeningRunBAfterAReplayOfRunAShowsNothingOfA)
{
    // Run A has a BatchNorm layer (bn1) that run B lacks, so what stays of A is visible.
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    ASSERT_TRUE(openAndWait(window, test::demoRun("batchnorm-poisoned")));
    ASSERT_TRUE(test::waitForScan(window));
    window.selectStep(250);
    window.selectLayer("bn1.weight");
    ReplayRequest request = window.replay()->request();
    ASSERT_EQ(request.step, 250);
    request.layerPrefix = "bn1";
    window.replay()->setLayerPrefix("bn1");
    QSignalSpy replayed(&window, &MainWindow::replayFinished);
    window.runReplay(request);
    ASSERT_TRUE(replayed.wait(120000));
    ASSERT_GT(window.replay()->model()->rowCount(), 0) << "run A's replay is on screen before the switch";
    ASSERT_TRUE(treeNames(*window.layerModel(), "bn1.weight"));
    ASSERT_FALSE(window.batchNorm()->summary().isEmpty());

    ASSERT_TRUE(openAndWait(window, test::demoRun("division-by-zero")));
    ASSERT_EQ(window.snapshot().info.runName, "division-by-zero");
    ASSERT_TRUE(window.snapshot().batchNorm.empty()) << "run B must have no BatchNorm layer for this test";
    // Replay pane: no result, no layer filter, only run B's steps.
    EXPECT_EQ(window.replay()->model()->rowCount(), 0);
    EXPECT_TRUE(window.replay()->report().result.ops.empty());
    EXPECT_TRUE(window.replay()->request().layerPrefix.isEmpty()) << window.replay()->request().layerPrefix.toStdString();
    const qint64 replayStep = window.replay()->request().step;
    const std::vector<int64_t> runBSteps = window.snapshot().info.replayableSteps();
    EXPECT_TRUE(replayStep < 0 || std::count(runBSteps.begin(), runBSteps.end(), replayStep)) << replayStep;
    // Selection, tree, layer detail and the BatchNorm view: nothing of A.
    EXPECT_NE(window.selectedStep(), 250);
    EXPECT_NE(window.selectedLayer(), "bn1.weight");
    EXPECT_FALSE(treeNames(*window.layerModel(), "bn1.weight")) << "run A's BatchNorm layer is still in the tree";
    EXPECT_NE(window.layerDetail()->detail().layer, "bn1.weight");
    EXPECT_TRUE(window.batchNorm()->summary().isEmpty()) << window.batchNorm()->summary().toStdString();
    // Every greyed-out tab says why in its tooltip, as the Replay tab did alone (issue 27).
    const auto* tabs = window.findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    EXPECT_FALSE(tabs->isTabEnabled(int(MainWindow::View::BatchNorm)));
    EXPECT_TRUE(tabs->tabToolTip(int(MainWindow::View::BatchNorm)).contains("No normalisation statistics"))
        << tabs->tabToolTip(int(MainWindow::View::BatchNorm)).toStdString();
    EXPECT_TRUE(tabs->isTabEnabled(int(MainWindow::View::Heatmap)));
    EXPECT_TRUE(tabs->tabToolTip(int(MainWindow::View::Heatmap)).isEmpty()) << "an enabled tab keeps no excuse";
}

// A failed open keeps the run shown whole (issue 51, item 8: it used to be thrown away): its views,
// actions and rows stay those of that run, not half of it beside an error page.
TEST(RunSwitch, AFailedOpenKeepsTheShownRunWhole)
{
    MainWindow window;
    ASSERT_TRUE(openAndWait(window, test::demoRun("sudden-blowup")));
    ASSERT_TRUE(test::waitForScan(window));
    const int incidents = window.incidentModel()->rowCount();
    const int parameters = window.layerModel()->parameterCount();
    ASSERT_GT(incidents, 0);
    ASSERT_GT(parameters, 0);
    ASSERT_TRUE(window.reloadAction()->isEnabled());

    QTemporaryDir empty;
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(empty.path());
    ASSERT_TRUE(loaded.wait(30000));
    EXPECT_FALSE(loaded.first().first().toBool());
    EXPECT_TRUE(window.errorText().isEmpty()) << "no error page over the run still shown";
    EXPECT_FALSE(window.openFailure().isEmpty()) << "the failure is said instead";
    EXPECT_EQ(window.incidentModel()->rowCount(), incidents);
    EXPECT_EQ(window.layerModel()->parameterCount(), parameters);
    EXPECT_FALSE(window.overview()->plot("loss")->plot()->graph(0)->data()->isEmpty());
    EXPECT_GT(window.heatmap()->heatmap().rows.size(), 0u);
    EXPECT_TRUE(window.reloadAction()->isEnabled()) << "F5 reloads the run shown";
    EXPECT_TRUE(window.exportAction()->isEnabled());
}

TEST(RunSwitch, ActionsThatNeedARunAreDisabledWithoutOne)
{
    MainWindow window;
    EXPECT_FALSE(window.reloadAction()->isEnabled()) << "F5 looked enabled with no run and did nothing";
    EXPECT_FALSE(window.exportAction()->isEnabled()) << "Ctrl+E looked enabled with no run and did nothing";
}

TEST(RunSwitch, StatusSaysIncidentInTheSingularAndNoLiveFollowForAFinishedRun)
{
    MainWindow window;
    ASSERT_TRUE(openAndWait(window, test::demoRun("healthy")));
    ASSERT_TRUE(test::waitForScan(window));
    EXPECT_FALSE(window.statusText().contains("following live")) << window.statusText().toStdString();
    EXPECT_FALSE(window.statusText().contains(" 1 incidents")) << window.statusText().toStdString();
}

// A damaged data chunk (a flipped byte in /activations, found by the corruption corpus) made the
// scan fail silently: the window waited for it forever, and --screenshot never returned.
TEST(RunSwitch, AScanThatFailsIsShownAndTheScreenshotIsTaken)
{
    QTemporaryDir dir;
    const QString run = dir.filePath("damaged");
    ASSERT_TRUE(QDir().mkpath(run));
    ASSERT_TRUE(QFile::copy(test::demoRun("healthy") + "/run.h5", run + "/run.h5"));
    int failures = 0;
    for (const qint64 fraction : {30, 50, 70, 90}) {
        QFile file(run + "/run.h5");
        ASSERT_TRUE(file.open(QIODevice::ReadWrite));
        const qint64 offset = file.size() * fraction / 100;
        file.seek(offset);
        const QByteArray block = file.read(4096);
        QByteArray flipped = block;
        for (auto& byte : flipped)
            byte = char(~byte);
        file.seek(offset);
        file.write(flipped);
        file.close();
        const auto result = test::runNanscope({run, "--screenshot", dir.filePath("shot.png")}, 40000);
        EXPECT_NE(result.exitCode, -1) << "the window never took its screenshot (offset " << offset << ")";
        auto scan = test::runNanscope({"scan", run});
        failures += scan.exitCode == 2;
        // Restore for the next offset, so each one is damaged alone.
        ASSERT_TRUE(file.open(QIODevice::ReadWrite));
        file.seek(offset);
        file.write(block);
        file.close();
    }
    EXPECT_GT(failures, 0) << "no offset damaged what the scan reads: pick others";
}
