// The replay pane, driven end to end offscreen on a demo run; and a crashing replay.
#include "AppTestSupport.h"

#include "app/window/MainWindow.h"
#include "app/codecs/ReplayJson.h"
#include "app/children/ReplayProcess.h"
#include "widgets/CheckpointsView.h"
#include "widgets/ReplayOpModel.h"
#include "widgets/TensorStatsModel.h"
#include "widgets/ReplayView.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>

using namespace nanscope;

namespace {
// Runs `program` as the replay child for one step of a demo run; the report it finishes with.
ReplayReport replayInChild(const QString& program, const char* run, qint64 step)
{
    ReplayProcess process;
    process.setProgram(program);
    QSignalSpy finished(&process, &ReplayProcess::finished);
    ReplayRequest request;
    request.step = step;
    process.start(test::demoRun(run), request);
    EXPECT_TRUE(finished.wait(60000)) << "the replay child never finished";
    return finished.isEmpty() ? ReplayReport{} : finished.first().first().value<ReplayReport>();
}
} // namespace

TEST(ReplayPane, ReplaysAStepInAChildProcessAndHighlightsTheCulprit)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(test::demoRun("division-by-zero"));
    ASSERT_TRUE(loaded.wait(30000));
    QAbstractItemModelTester tester(window.replay()->model(), QAbstractItemModelTester::FailureReportingMode::Fatal);

    window.selectStep(185); // the pane picks the replayable step at or before it
    ReplayRequest request = window.replay()->request();
    EXPECT_EQ(request.step, 180);
    request.bisect = true;
    QSignalSpy finished(&window, &MainWindow::replayFinished);
    window.runReplay(request);
    ASSERT_TRUE(finished.wait(120000));
    ASSERT_TRUE(finished.first().first().toBool()) << window.replay()->report().error.toStdString();

    const ReplayReport& report = window.replay()->report();
    ASSERT_TRUE(report.result.firstNonfinite);
    EXPECT_EQ(report.result.firstNonfinite->op, "aten::div");
    EXPECT_EQ(report.result.badSamples, std::vector<int64_t>{5});
    ReplayOpModel* model = window.replay()->model();
    const int row = model->rowOfOp(report.firstNonfiniteIndex());
    ASSERT_GE(row, 0);
    EXPECT_TRUE(model->index(row, 0).data(ReplayOpModel::IsCulpritRole).toBool());
    EXPECT_EQ(model->index(row, ReplayOpModel::Module).data().toString(), "norm");
    EXPECT_TRUE(window.replay()->summaryText().contains("aten::div"));
    EXPECT_TRUE(window.replay()->summaryText().contains("return centered / scale")) << "the culprit's line of code";
    EXPECT_TRUE(window.replay()->summaryText().contains("<b>5</b>")) << "the bad sample is named";
}

TEST(ReplayPane, TheTriageButtonShowsTheEvidenceAndTheLabel)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(test::demoRun("division-by-zero"));
    ASSERT_TRUE(loaded.wait(30000));
    window.selectStep(180);
    // Issue 27: after a replay filtered to one module, a triage of the whole step left the op
    // table on the filtered replay. The triage's own replay of the step now fills it.
    ReplayRequest filtered = window.replay()->request();
    filtered.layerPrefix = "norm";
    filtered.bisect = true; // "Find bad samples": the triage must not drop what it found
    QSignalSpy replayed(&window, &MainWindow::replayFinished);
    window.runReplay(filtered);
    ASSERT_TRUE(replayed.wait(120000));
    const int filteredRows = window.replay()->model()->rowCount();
    window.replay()->setLayerPrefix(QString()); // the user clears the filter
    QPushButton* triage = nullptr;
    for (QPushButton* button : window.replay()->findChildren<QPushButton*>())
        if (button->text() == "Triage")
            triage = button;
    ASSERT_NE(triage, nullptr) << "the replay pane has a Triage button";
    QSignalSpy finished(&window, &MainWindow::triageFinished);
    triage->click();
    ASSERT_TRUE(finished.wait(300000));
    ASSERT_TRUE(finished.first().first().toBool()) << window.replay()->triage().error.toStdString();
    const TriageReport& report = window.replay()->triage();
    EXPECT_EQ(report.evidence.step, 180);
    EXPECT_EQ(report.verdict.label, TriageLabel::Data) << report.verdict.why;
    const QString text = window.replay()->triageText();
    EXPECT_TRUE(text.contains("Triage of step 180: data")) << text.toStdString();
    EXPECT_TRUE(text.contains("earlier checkpoint")) << "the evidence table";

    ReplayOpModel* ops = window.replay()->model();
    EXPECT_GT(ops->rowCount(), filteredRows) << "the op table shows the whole step the triage replayed";
    QSet<QString> modules;
    for (int row = 0; row < ops->rowCount(); ++row)
        modules << ops->index(row, ReplayOpModel::Module).data().toString();
    EXPECT_GT(modules.size(), 1) << "ops of every module, not only the filtered one's";
    EXPECT_EQ(window.replay()->report().result.step, 180);
    ASSERT_TRUE(window.replay()->report().result.firstNonfinite);
    EXPECT_EQ(window.replay()->report().result.firstNonfinite->op, "aten::div");
    // Issue 51: the triage's replay does not bisect; the bad samples found before it stay.
    EXPECT_EQ(window.replay()->report().result.badSamples, std::vector<int64_t>{5});
    EXPECT_TRUE(window.replay()->summaryText().contains("Bad samples")) << window.replay()->summaryText().toStdString();
}

// Issue 27: the replay step started at the first saved step, not at the incident's, and a
// cancelled triage left "Triaging step 180..." on screen.
TEST(ReplayPane, StartsAtTheWorstIncidentsStepAndACancelledTriageLeavesNoMessage)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    QSignalSpy found(&window, &MainWindow::incidentsFound);
    window.openRun(test::demoRun("division-by-zero"));
    ASSERT_TRUE(loaded.wait(30000));
    ASSERT_TRUE(found.count() > 0 || found.wait(60000)) << "no scan";
    EXPECT_EQ(window.replay()->request().step, 180) << "the critical incident's step, before any selection";
    QPushButton* triage = nullptr;
    QPushButton* cancel = nullptr;
    for (QPushButton* button : window.replay()->findChildren<QPushButton*>()) {
        if (button->text() == "Triage")
            triage = button;
        if (button->text() == "Cancel")
            cancel = button;
    }
    ASSERT_NE(triage, nullptr);
    ASSERT_NE(cancel, nullptr);
    triage->click();
    auto shownText = [&] {
        QString text;
        for (QLabel* label : window.replay()->findChildren<QLabel*>())
            if (label->isVisibleTo(window.replay()))
                text += label->text();
        return text;
    };
    ASSERT_TRUE(shownText().contains("Triaging step")) << "the triage shows that it runs";
    cancel->click();
    EXPECT_FALSE(shownText().contains("Triaging step")) << shownText().toStdString();
}

TEST(ReplayPane, ACrashingReplayIsReportedAndTheWindowSurvives)
{
    QTemporaryDir dir;
    const QString crasher = dir.filePath("crashing-nanscope");
    QFile script(crasher);
    ASSERT_TRUE(script.open(QIODevice::WriteOnly));
    script.write("#!/bin/sh\necho 'Segmentation fault in libtorch' >&2\nkill -SEGV $$\n");
    script.close();
    script.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);

    const ReplayReport report = replayInChild(crasher, "division-by-zero", 180);
    EXPECT_TRUE(report.error.contains("crashed")) << report.error.toStdString();
    EXPECT_EQ(report.result.step, 180);
}

TEST(ReplayPane, AMissingStepIsAnErrorInThePane)
{
    const ReplayReport report = replayInChild(NANSCOPE_BINARY, "healthy", 7);
    EXPECT_TRUE(report.error.contains("no checkpoint for step 7")) << report.error.toStdString();
}

TEST(ReplayPane, ParsesTheCommandLineJson)
{
    const auto result = test::runNanscope({"replay", test::demoRun("batchnorm-poisoned"), "--step", "250", "--eval", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const ReplayReport report = parseReplayJson(result.out.toUtf8());
    EXPECT_TRUE(report.error.isEmpty());
    EXPECT_EQ(report.mode, "eval");
    ASSERT_TRUE(report.result.firstNonfinite);
    const ReplayOp& culprit = *report.result.firstNonfinite;
    EXPECT_EQ(culprit.op, "aten::batch_norm");
    ASSERT_GE(culprit.inputs.size(), 4u);
    EXPECT_TRUE(hasNonfinite(culprit.inputs[3])) << "the running mean is the poisoned input";
    // Nothing dropped on the way through the child: the pane reads the struct the replay wrote
    // (absmax, dtype, numel and the shape included).
    ASSERT_TRUE(culprit.output);
    const TensorStats& output = *culprit.output;
    EXPECT_EQ(output.dtype, DType::Float32);
    EXPECT_GT(output.numel, 0);
    EXPECT_FALSE(output.shape.empty());
    ASSERT_TRUE(culprit.inputs[1] && culprit.inputs[1]->min);
    const TensorStats& weight = *culprit.inputs[1];
    EXPECT_GT(weight.absmax, 0) << "absmax was dropped by the old decoder";
    EXPECT_DOUBLE_EQ(weight.absmax, std::max(std::fabs(*weight.min), std::fabs(*weight.max)));
    EXPECT_FALSE(report.result.notes.empty());
    EXPECT_TRUE(parseReplayJson("not json").error.contains("no valid JSON"));
}

TEST(CheckpointsPane, ShowsTensorStatisticsWithPoisonedBuffersFlagged)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    window.setInitialSelection(250, QString());
    QSignalSpy shown(&window, &MainWindow::checkpointShown);
    window.openRun(test::demoRun("batchnorm-poisoned"));
    ASSERT_TRUE(shown.wait(60000));
    EXPECT_EQ(shown.last().first().toLongLong(), 250);
    TensorStatsModel* model = window.checkpoints()->model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    ASSERT_EQ(model->rowCount(), 10);
    bool sawPoisonedBuffer = false;
    for (const auto& t : model->tensors())
        if (t.stats.name == "bn1.running_mean") {
            sawPoisonedBuffer = true;
            EXPECT_EQ(t.stats.nan, 32);
            EXPECT_TRUE(model->index(int(&t - model->tensors().data()), TensorStatsModel::Name).data().toString().contains("[BN buffer]"));
            ASSERT_TRUE(t.update);
            EXPECT_EQ(t.update->becameNonfinite, 32) << "finite at checkpoint 200, NaN at 250";
        } else if (t.stats.name == "fc1.weight") {
            EXPECT_EQ(t.stats.histogram.size(), 40u);
            ASSERT_TRUE(t.update && t.update->relativeUpdate);
            EXPECT_GT(*t.update->relativeUpdate, 0) << "diffed against checkpoint 200";
            // Nothing lost through the child process: absmax and the shape arrive as stats computed them.
            EXPECT_GT(t.stats.absmax, 0);
            EXPECT_EQ(model->index(int(&t - model->tensors().data()), TensorStatsModel::Shape).data().toString(),
                      QString::fromStdString(shapeText(t.stats.shape)));
        }
    EXPECT_TRUE(sawPoisonedBuffer);
    EXPECT_TRUE(window.checkpoints()->summary().contains("2 flagged")) << window.checkpoints()->summary().toStdString();
}
