// The window at a small screen (issue 51, item 6): the docks keep a usable size at 1024x700 and
// after the window grows back and restarts, a saved layout that no longer fits is repaired, the
// replay table keeps the NaN/Inf columns in view and scrolls to the first bad op, and the
// checkpoint table keeps its flags in view.
#include "AppTestSupport.h"
#include "WindowTestSupport.h"

#include "app/window/MainWindow.h"
#include "app/window/WindowDocks.h"
#include "widgets/CheckpointsView.h"
#include "widgets/ReplayOpModel.h"
#include "widgets/ReplayView.h"
#include "widgets/TensorStatsModel.h"

#include <QDockWidget>
#include <QHeaderView>
#include <QScrollBar>
#include <QSettings>
#include <QTableView>
#include <QTest>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
QDockWidget* dockNamed(MainWindow& window, const QString& name)
{
    return window.findChild<QDockWidget*>(name);
}
} // namespace

TEST(WindowLayout, TheLayersDockKeepsItsWidthAt1024x700AndAfterARestart)
{
    {
        MainWindow window;
        window.resize(1024, 700);
        window.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
        ASSERT_TRUE(test::openAndWait(window, test::demoRun("sudden-blowup")));
        QDockWidget* layers = dockNamed(window, "LayersDock");
        ASSERT_NE(layers, nullptr);
        QCoreApplication::processEvents();
        EXPECT_GE(layers->width(), kLayersDockMinimumWidth);
        // Nothing in it (a long status line, the welcome text) makes it wider than a small screen.
        EXPECT_LE(window.minimumSizeHint().width(), 1024);
        EXPECT_EQ(window.width(), 1024);
        window.resize(700, 500); // squeezed further than any screen it runs on
        QCoreApplication::processEvents();
        EXPECT_GE(layers->width(), kLayersDockMinimumWidth) << "never below a usable width";
        window.resize(1280, 800);
        QCoreApplication::processEvents();
        EXPECT_GE(layers->width(), kLayersDockMinimumWidth);
        window.close(); // saves the layout (the test's own settings, under its HOME)
    }
    MainWindow restarted;
    restarted.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&restarted));
    QCoreApplication::processEvents();
    EXPECT_GE(dockNamed(restarted, "LayersDock")->width(), kLayersDockMinimumWidth);
    EXPECT_GE(dockNamed(restarted, "IncidentsDock")->height(), kIncidentsDockMinimumHeight);
}

TEST(WindowLayout, ALayoutThatNoLongerFitsTheScreenIsRepaired)
{
    MainWindow window;
    window.resize(3000, 2000); // saved on a larger screen
    window.move(5000, 4000);
    const QRect screen(0, 0, 1024, 700);
    EXPECT_TRUE(repairWindowLayout(&window, screen));
    EXPECT_LE(window.width(), 1024);
    EXPECT_LE(window.height(), 700);
    EXPECT_TRUE(screen.contains(window.frameGeometry().topLeft()));
    EXPECT_FALSE(repairWindowLayout(&window, screen)) << "a layout that fits is left alone";
}

TEST(WindowLayout, TheReplayTableShowsTheNumbersAndScrollsToTheFirstBadOp)
{
    EXPECT_EQ(shortSource("/home/me/.venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py:312"),
              QString::fromUtf8("\u2026/gpt2/modeling_gpt2.py:312"));
    EXPECT_EQ(shortSource("model.py:42"), "model.py:42");

    ReplayView view;
    view.resize(1000, 600);
    ReplayReport report;
    report.mode = "train";
    report.dtype = "float32";
    for (int i = 0; i < 200; ++i) {
        ReplayOp op;
        op.index = i;
        op.op = "aten::linear";
        op.module = "encoder.layers." + std::to_string(i) + ".self_attention.output.dense";
        op.source = "/home/someone/.venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py:" +
                    std::to_string(100 + i);
        TensorStats out;
        out.numel = 4;
        if (i == 150)
            out.nan = 4;
        op.output = out;
        report.result.ops.push_back(op);
    }
    report.result.firstNonfinite = report.result.ops[150];
    report.result.step = 7;
    view.setReport(report); // while the pane is hidden (another tab shown)
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QCoreApplication::processEvents();
    QTableView* table = view.table();
    const int row = view.model()->rowOfOp(150);
    ASSERT_GE(row, 0);
    EXPECT_EQ(table->currentIndex().row(), row) << "the first bad op is selected";
    const QRect cell = table->visualRect(view.model()->index(row, ReplayOpModel::NaN));
    EXPECT_TRUE(table->viewport()->rect().intersects(cell)) << "and scrolled into view";
    // The NaN and Inf columns are within the pane's width, not pushed off it by the paths.
    const int nanRight = table->horizontalHeader()->sectionViewportPosition(ReplayOpModel::Inf) +
                         table->columnWidth(ReplayOpModel::Inf);
    EXPECT_LE(nanRight, table->viewport()->width()) << "Inf column ends at " << nanRight;
}

TEST(WindowLayout, TheCheckpointTableKeepsInfAndTheFlagsInView)
{
    CheckpointsView view;
    view.resize(840, 520); // the tab's share of a 1024x700 window
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    std::vector<CheckpointTensor> tensors;
    for (int i = 0; i < 30; ++i) {
        CheckpointTensor t;
        t.stats.name = "model.encoder.layers." + std::to_string(i) + ".self_attention.query_key_value.weight";
        t.stats.shape = {4096, 12288};
        t.stats.numel = 4096 * 12288;
        if (i == 3)
            t.flags = {"32 NaN"};
        tensors.push_back(t);
    }
    view.setTensors(100, tensors, QString());
    QCoreApplication::processEvents();
    QTableView* table = view.table();
    const int flagsRight = table->horizontalHeader()->sectionViewportPosition(TensorStatsModel::Inf) +
                           table->columnWidth(TensorStatsModel::Inf);
    EXPECT_LE(flagsRight, table->viewport()->width()) << "the Inf column is cut by long tensor names";
    EXPECT_GE(table->viewport()->height() / std::max(1, table->rowHeight(0)), 7) << "more than five rows in view";
}
