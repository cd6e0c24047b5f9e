// The overview of a run read from another tool's logs: every series it logs can be plotted.

#include "WindowTestSupport.h"

#include "app/window/MainWindow.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QFile>
#include <QMenu>
#include <QTemporaryDir>
#include <QToolButton>

#include <cmath>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
// A Hugging Face Trainer folder: 40 training steps, an evaluation every 10 (its accuracy NaN at
// step 30, as a diverged model's metric is).
bool writeTrainerState(const QString& folder)
{
    QStringList history;
    for (int step = 1; step <= 40; ++step) {
        history << QString(R"({"epoch": %1, "grad_norm": %2, "learning_rate": 0.001, "loss": %3, "step": %4})")
                       .arg(step / 20.0)
                       .arg(1.0 + step)
                       .arg(5.0 - 0.1 * step)
                       .arg(step);
        if (step % 10 == 0)
            history << QString(R"({"epoch": %1, "eval_accuracy": %2, "eval_loss": %3, "step": %4})")
                           .arg(step / 20.0)
                           .arg(step == 30 ? QString("NaN") : QString::number(step / 50.0))
                           .arg(4.0 - 0.05 * step)
                           .arg(step);
    }
    QFile file(QDir(folder).filePath("trainer_state.json"));
    if (!file.open(QIODevice::WriteOnly))
        return false;
    file.write(QString(R"({"global_step": 40, "epoch": 2.0, "log_history": [%1]})").arg(history.join(",\n")).toUtf8());
    return true;
}
} // namespace

TEST(MainWindow, EveryLoggedSeriesOfATrainerRunCanBeAddedFromTheSeriesMenu)
{
    QTemporaryDir folder;
    ASSERT_TRUE(writeTrainerState(folder.path()));
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, folder.path())) << window.errorText().toStdString();

    // The snapshot carries the evaluation table whole, and its eval loss still overlays the loss.
    const auto& tables = window.snapshot().seriesTables;
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_EQ(tables.front().name, "eval");
    EXPECT_EQ(tables.front().steps, (std::vector<int64_t>{10, 20, 30, 40}));
    QCPGraph* evalOverlay = window.overview()->plot("loss")->plot()->graph(1);
    EXPECT_TRUE(evalOverlay->visible());
    EXPECT_EQ(evalOverlay->dataCount(), 4);

    // What a user does: open the Series menu, tick eval_accuracy.
    auto* button = window.overview()->findChild<QToolButton*>("overview.series");
    ASSERT_TRUE(button && button->menu());
    emit button->menu()->aboutToShow();
    QAction* accuracyAction = nullptr;
    QStringList offered;
    for (QAction* action : button->menu()->actions()) {
        if (action->isSeparator())
            continue;
        offered << action->text();
        if (action->text() == "eval_accuracy")
            accuracyAction = action;
    }
    EXPECT_TRUE(offered.contains("epoch")) << offered.join(", ").toStdString();
    EXPECT_FALSE(offered.contains("loss")) << "the loss has its plot already";
    ASSERT_TRUE(accuracyAction) << offered.join(", ").toStdString();
    accuracyAction->trigger();

    SeriesPlot* accuracy = window.overview()->plot("eval/eval_accuracy");
    ASSERT_TRUE(accuracy);
    EXPECT_FALSE(accuracy->isHidden());
    EXPECT_EQ(accuracy->nanCount(), 1) << "the NaN accuracy at step 30 is marked";
    QCPGraph* line = accuracy->plot()->graph(0);
    ASSERT_EQ(line->dataCount(), 4);
    EXPECT_DOUBLE_EQ(line->data()->at(1)->key, 20);
    EXPECT_DOUBLE_EQ(line->data()->at(1)->value, 0.4);
    EXPECT_TRUE(std::isnan(line->data()->at(2)->value)) << "a gap at the NaN, never a line through it";

    // It zooms with the others: one step axis.
    window.overview()->plot("loss")->plot()->xAxis->setRange(5, 25);
    EXPECT_DOUBLE_EQ(accuracy->plot()->xAxis->range().lower, 5);
    EXPECT_DOUBLE_EQ(accuracy->plot()->xAxis->range().upper, 25);

    // Reopening the run keeps the plot the user added, with the run's data.
    ASSERT_TRUE(test::openAndWait(window, folder.path()));
    ASSERT_EQ(window.overview()->plot("eval/eval_accuracy"), accuracy);
    EXPECT_EQ(accuracy->plot()->graph(0)->dataCount(), 4);
}

// A DeepSpeed log prints the learning rate every 10 steps and the loss scale on overflow only: the
// learning rate is a table of its own rate (/scalars_lr), and it is plotted by default all the same
// (it took Series... to see it; issue 27). The real DeepSpeed-Chat log of ../shared/real-logs, read
// in place.
TEST(MainWindow, ALearningRateLoggedAtARateOfItsOwnIsPlottedByDefault)
{
    const QString run = QString(NANSCOPE_REAL_LOGS) + "/microsoft__DeepSpeedExamples__dschat-rm-loss-scale-cascade";
    if (!QDir(run).exists())
        GTEST_SKIP() << "no " << run.toStdString();
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, run)) << window.errorText().toStdString();
    const SeriesTable* lrTable = nullptr;
    for (const auto& table : window.snapshot().seriesTables)
        if (table.series.count("lr"))
            lrTable = &table;
    ASSERT_NE(lrTable, nullptr) << "the learning rate is a table of its own rate in this log";
    SeriesPlot* lr = window.overview()->plot("lr");
    ASSERT_NE(lr, nullptr);
    EXPECT_FALSE(lr->isHidden());
    ASSERT_GT(lr->plot()->graphCount(), 0);
    EXPECT_EQ(lr->plot()->graph(0)->data()->size(), int(lrTable->steps.size()));
    // 43 rows of /scalars end at 1826, the learning rate's at 1840: the status names the whole span.
    EXPECT_TRUE(window.statusText().contains(QString("–%1 in all its series").arg(lrTable->steps.back())))
        << window.statusText().toStdString();
}
