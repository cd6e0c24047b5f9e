// A multi-rank run in the window and the report: the incident table names each incident's rank,
// choosing an incident found on another rank shows that rank, and the report covers every rank.

#include "AppTestSupport.h"
#include "WindowTestSupport.h"

#include "app/window/MainWindow.h"
#include "app/window/RankControls.h"
#include "app/window/RunSession.h"
#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"
#include "widgets/IncidentModel.h"
#include <QElapsedTimer>
#include "widgets/HeatmapView.h"
#include "widgets/RankLanes.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;
namespace rf = nanscope::runformat;

namespace {

// A 3-rank DDP job of 60 steps; rank 1's own loss and local gradient go NaN at step 30 and the
// all-reduced gradient norm of every rank with it.
void writeJob(const QString& dir)
{
    QFile manifest(dir + "/" + rf::kRankManifestName);
    ASSERT_TRUE(manifest.open(QIODevice::WriteOnly));
    manifest.write(R"({"format": "training-run-ranks", "format_version": 1, "world_size": 3, "ranks": [
        {"rank": 0, "directory": "rank_00000"}, {"rank": 1, "directory": "rank_00001"},
        {"rank": 2, "directory": "rank_00002"}]})");
    manifest.close();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int rank = 0; rank < 3; ++rank) {
        RunSchema schema;
        schema.scalars = {"loss", "grad_norm", rf::kLocalGradNorm};
        auto writer = RunWriter::create((dir + "/" + QString::fromStdString(rf::rankDirName(rank))).toStdString(), schema);
        ASSERT_TRUE(writer) << writer.error();
        std::vector<int64_t> steps;
        std::map<std::string, std::vector<double>> values;
        for (int64_t step = 0; step < 60; ++step) {
            steps.push_back(step);
            const double wobble = 1.0 + 0.05 * std::sin(double(rank * 7 + step));
            const bool poisoned = rank == 1 && step >= 30;
            values["loss"].push_back(poisoned ? nan : wobble);
            values["grad_norm"].push_back(step >= 30 ? nan : 0.4);
            values[rf::kLocalGradNorm].push_back(poisoned ? nan : 0.5 * wobble);
        }
        ASSERT_TRUE((*writer)->appendSeries(rf::kScalars, steps, values));
        ASSERT_TRUE((*writer)->close());
    }
}

// Waits until the window's views show this rank's run.
bool showsRank(MainWindow& window, int rank)
{
    const std::string shown = "rank " + std::to_string(rank) + " shown";
    QElapsedTimer clock;
    clock.start();
    while (window.snapshot().info.source.format.find(shown) == std::string::npos && clock.elapsed() < 30000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return window.snapshot().info.source.format.find(shown) != std::string::npos;
}

} // namespace

TEST(RankWindow, IncidentsNameTheirRankAndChoosingOneShowsThatRank)
{
    QTemporaryDir dir;
    writeJob(dir.path());
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, dir.path()));
    ASSERT_TRUE(test::waitForScan(window));
    IncidentModel* model = window.incidentModel();
    ASSERT_TRUE(model->hasRanks());
    EXPECT_FALSE(window.incidentTable()->isColumnHidden(IncidentModel::Rank));

    int otherRankRow = -1;
    for (int row = 0; row < model->rowCount(); ++row)
        if (model->index(row, 0).data(IncidentModel::RankRole).toInt() == 1)
            otherRankRow = row;
    ASSERT_GE(otherRankRow, 0) << "rank 1 went NaN first: an incident names it";
    const int64_t onset = model->incidentAt(otherRankRow)->onsetStep;
    // The window opens on the first rank to go NaN (rank 1): show another one first.
    QComboBox* selector = window.rankControls()->selector();
    window.rankControls()->showRank(0);
    ASSERT_TRUE(showsRank(window, 0)) << window.snapshot().info.source.format;
    ASSERT_TRUE(test::waitForScan(window)) << "the views start over on rank 0's run, the incidents with them";
    ASSERT_EQ(selector->currentData().toInt(), 0);

    window.incidentTable()->setCurrentIndex(model->index(otherRankRow, 0));
    EXPECT_EQ(selector->currentData().toInt(), 1) << "the selector follows the click at once";
    EXPECT_TRUE(showsRank(window, 1)) << window.snapshot().info.source.format;
    // Once rank 1's run is up, the incident is chosen there: its row, and its onset step selected.
    QElapsedTimer clock;
    clock.start();
    while (window.context()->selectedStep() != onset && clock.elapsed() < 30000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    EXPECT_EQ(window.context()->selectedStep(), onset);
    EXPECT_EQ(window.incidentTable()->currentIndex().row(), otherRankRow);
    EXPECT_EQ(model->incidentAt(otherRankRow)->rank, std::optional<int>(1));
}

// The report scans the whole job as `nanscope scan` does, not only the rank shown first, and its
// timeline names the rank of each incident.
TEST(RankReport, CoversEveryRankAndNamesEachIncidentsRank)
{
    QTemporaryDir job, out;
    writeJob(job.path());
    const QString report = QDir(out.path()).filePath("report.md");
    const auto result = test::runNanscope({"report", job.path(), "-o", report, "--no-replay"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    QFile file(report);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(file.readAll());
    EXPECT_TRUE(text.contains("| onset | rank | non-finite at |")) << text.toStdString();
    EXPECT_TRUE(text.contains("| rank_nonfinite | ")) << "the rank rules ran: " << text.toStdString();
    const auto scan = test::runNanscope({"scan", job.path()});
    EXPECT_EQ(scan.exitCode, 1) << "a critical incident fails CI: " << scan.err.toStdString();
    EXPECT_TRUE(scan.out.contains("rank 1")) << scan.out.toStdString();
}

namespace {

// The job above, with rank 1's step 30 saved (a checkpoint and a batch that replay: the
// division-by-zero demo's step 180, copied under step 30), as a recorder on that rank would.
void writeJobWithRankOneSaved(const QString& dir)
{
    writeJob(dir);
    const QString rank1 = dir + "/" + QString::fromStdString(rf::rankDirName(1));
    const QString demo = test::demoRun("division-by-zero");
    ASSERT_TRUE(QDir(rank1).mkpath("checkpoints") && QDir(rank1).mkpath("batches"));
    ASSERT_TRUE(QFile::copy(demo + "/checkpoints/step_00000180.pt", rank1 + "/checkpoints/step_00000030.pt"));
    ASSERT_TRUE(QFile::copy(demo + "/batches/step_00000180.pt", rank1 + "/batches/step_00000030.pt"));
    if (QFile::exists(demo + "/checkpoints/step_00000180.form"))
        ASSERT_TRUE(QFile::copy(demo + "/checkpoints/step_00000180.form", rank1 + "/checkpoints/step_00000030.form"));
}

} // namespace

// Issue 24: `nanscope replay JOB --step 30` on the job's top folder said "has no checkpoint for step
// 30": the checkpoints are in the rank's folder. It now reads the rank that went non-finite first.
TEST(MultiRankRun, ReplayOnTheJobFolderGoesToTheRankThatSavedTheStep)
{
    QTemporaryDir dir;
    writeJobWithRankOneSaved(dir.path());
    const auto replay = test::runNanscope({"replay", dir.path(), "--step", "30", "--json"}, 300000);
    EXPECT_EQ(replay.exitCode, 0) << replay.err.toStdString();
    EXPECT_TRUE(replay.err.contains("reading rank 1")) << replay.err.toStdString();
    EXPECT_TRUE(replay.out.contains("\"step\"")) << replay.out.left(400).toStdString();

    const auto onRank0 = test::runNanscope({"replay", dir.path(), "--step", "30", "--rank", "0"});
    EXPECT_NE(onRank0.exitCode, 0) << "rank 0 saved no step 30";
    EXPECT_TRUE(onRank0.err.contains("rank_00000")) << onRank0.err.toStdString();

    const auto triage = test::runNanscope({"triage", dir.path(), "--step", "30", "--json"}, 600000);
    EXPECT_TRUE(triage.err.contains("reading rank 1")) << triage.err.toStdString();
    EXPECT_FALSE(triage.err.contains("has no saved batch")) << triage.err.toStdString();
    const auto triageRank2 = test::runNanscope({"triage", dir.path(), "--step", "30", "--rank", "2"});
    EXPECT_NE(triageRank2.exitCode, 0);
    EXPECT_TRUE(triageRank2.err.contains("rank_00002")) << triageRank2.err.toStdString();
}

// Issue 27: the rank heatmap opened on "non-finite count", blank white from the failing step on
// (every rank non-finite); the gradient norm shows the rank that went first, and the view's box
// names what it shows.
TEST(MultiRankRun, TheRankHeatmapOpensOnTheGradientNorm)
{
    QTemporaryDir dir;
    writeJob(dir.path());
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, dir.path()));
    HeatmapView* ranks = window.rankControls()->heatmap();
    QElapsedTimer clock;
    clock.start();
    while (ranks->heatmap().rows.empty() && clock.elapsed() < 30000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    ASSERT_FALSE(ranks->heatmap().rows.empty()) << "no rank heatmap";
    EXPECT_EQ(ranks->heatmap().quantity, HeatmapQuantity::GradNormLog10);
    EXPECT_EQ(ranks->quantity(), HeatmapQuantity::GradNormLog10) << "the box names another quantity than shown";
}

// The heatmaps are made before the scan, on the session's thread. The scan of a large job takes
// many seconds and the heatmaps a fraction of one: made after it, they left a rank switch asked for
// as soon as the incidents were listed waiting behind them (356 ms at 64 ranks in bench_ranks,
// 65 ms after), and the heatmaps themselves were shown only after every rank had been scanned.
TEST(MultiRankRun, TheRankHeatmapIsShownBeforeTheScanOfEveryRankEnds)
{
    QTemporaryDir dir;
    writeJob(dir.path());
    RunSession session;
    QStringList order;
    QObject::connect(&session, &RunSession::loaded, [&] { order << "loaded"; });
    QObject::connect(&session, &RunSession::rankHeatmapReady, [&] { order << "rank heatmap"; });
    QObject::connect(&session, &RunSession::scanned, [&] { order << "scanned"; });
    session.open(dir.path());
    session.close();
    EXPECT_EQ(order, (QStringList{"loaded", "rank heatmap", "scanned"}));
}

// Issue 51, item 7: which rank went first was a one-pixel sliver of the ranks heatmap. A lane per
// rank says it: rank 1 went non-finite at step 30, first; the others stayed finite on their own.
TEST(MultiRankRun, TheRankLanesSayWhichRankWentFirstAndWhen)
{
    QTemporaryDir dir;
    writeJob(dir.path());
    MainWindow window;
    ASSERT_TRUE(test::openAndWait(window, dir.path()));
    ASSERT_TRUE(test::waitForScan(window));
    RankLanes* lanes = window.rankControls()->lanes();
    QTest::qWaitFor([&] { return lanes->laneTexts().size() >= 3; }, 30000);
    const QStringList texts = lanes->laneTexts();
    ASSERT_EQ(texts.size(), 3) << texts.join(" | ").toStdString();
    EXPECT_EQ(texts[1], "rank 1: non-finite from step 30 (first)");
    EXPECT_EQ(texts[0], "rank 0: finite throughout") << "its own loss and local gradient stayed finite";
    // Clicking a lane shows that rank.
    emit lanes->rankClicked(2);
    EXPECT_TRUE(showsRank(window, 2)) << window.snapshot().info.source.format;
}
