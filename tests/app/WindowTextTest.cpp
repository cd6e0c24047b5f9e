// What the window says about a run (issue 27): an empty incident table says the run looks healthy,
// and the status line counts logged steps and the steps they span.

#include "AppTestSupport.h"
#include "WindowTestSupport.h"
#include "app/window/MainWindow.h"
#include "core/run/RunWriter.h"
#include "widgets/IncidentModel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

// A healthy run logged every 43rd step: 44 rows over steps 0..1849.
QString writeSparseHealthyRun(const QTemporaryDir& dir)
{
    const QString run = dir.filePath("sparse");
    RunSchema schema;
    schema.scalars = {"loss"};
    auto writer = RunWriter::create(run.toStdString(), schema);
    EXPECT_TRUE(writer) << writer.error();
    std::vector<int64_t> steps;
    std::map<std::string, std::vector<double>> values;
    for (int64_t i = 0; i < 44; ++i) {
        steps.push_back(i * 43);
        values["loss"].push_back(2.0 - 0.001 * double(i));
    }
    EXPECT_TRUE((*writer)->appendSeries("scalars", steps, values));
    EXPECT_TRUE((*writer)->close());
    return run;
}

} // namespace

TEST(WindowText, AnEmptyIncidentTableSaysTheRunLooksHealthy)
{
    QTemporaryDir dir;
    const QString run = writeSparseHealthyRun(dir);
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, run));
    ASSERT_TRUE(test::waitForScan(window));
    auto* pages = window.findChild<QStackedWidget*>("incidentPages");
    ASSERT_NE(pages, nullptr);
    auto* none = window.findChild<QLabel*>("noIncidents");
    ASSERT_NE(none, nullptr);
    EXPECT_EQ(pages->currentWidget(), none) << "an empty table said nothing";
    EXPECT_TRUE(none->text().contains("looks healthy"));
}

TEST(WindowText, TheStatusLineCountsLoggedStepsAndTheirSpan)
{
    QTemporaryDir dir;
    const QString run = writeSparseHealthyRun(dir);
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, run));
    QString status;
    for (QLabel* label : window.statusBar()->findChildren<QLabel*>())
        status += label->text();
    EXPECT_TRUE(status.contains(QString::fromUtf8("44 logged steps (0\u20131849)"))) << status.toStdString();
    EXPECT_FALSE(status.contains("44 steps (last")) << status.toStdString();
}

TEST(WindowText, TheCauseColumnEndsInsideTheIncidentListAt1280x800)
{
    // Issue 27: sized to its text, the cause ran past the dock's right edge and was cut off.
    MainWindow window;
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(test::openAndWait(window, test::demoRun("sudden-blowup")));
    ASSERT_TRUE(test::waitForScan(window));
    QCoreApplication::processEvents();
    auto* table = window.findChild<QStackedWidget*>("incidentPages")->findChild<QTableView*>();
    ASSERT_NE(table, nullptr);
    ASSERT_GT(table->model()->rowCount(), 0);
    QHeaderView* header = table->horizontalHeader();
    const int causeRight = header->sectionViewportPosition(IncidentModel::Cause) + header->sectionSize(IncidentModel::Cause);
    EXPECT_LE(causeRight, table->viewport()->width() + 1) << "the cause runs past the edge";
    EXPECT_GE(header->sectionSize(IncidentModel::Cause), 200) << "and has room to be read";
    const QString cause = table->model()->index(0, IncidentModel::Cause).data().toString();
    EXPECT_TRUE(table->model()->index(0, IncidentModel::Cause).data(Qt::ToolTipRole).toString().contains(cause))
        << "the whole cause is in the tooltip";
}
