// Small behaviours of the panes that a user noticed were missing (issue 17, window bugs 6 and 7).
#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OptimizerStateModel.h"
#include "widgets/ReplayOpModel.h"
#include "widgets/ReplayView.h"
#include "widgets/SeriesPlot.h"
#include "widgets/TensorStatsModel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
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

// What the pane says replay runs: the file's code (TorchScript), none of it (an exported program),
// or the training code (eager), as the run's checkpoints are.
TEST(ReplayView, SaysWhetherReplayRunsCodeFromTheFile)
{
    ReplayView view;
    auto said = [&view] {
        for (const QLabel* label : view.findChildren<QLabel*>())
            if (label->text().startsWith("Replay "))
                return label->text();
        return QString();
    };
    view.setEagerFactory(QString(), false);
    EXPECT_TRUE(said().contains("TorchScript, which runs code from the file")) << said().toStdString();
    view.setEagerFactory(QString(), true);
    EXPECT_TRUE(said().contains("nothing of the file runs as code")) << said().toStdString();
    EXPECT_FALSE(said().contains("TorchScript")) << said().toStdString();
    view.setEagerFactory("nanscope_recorder.hf:rebuild", true);
    EXPECT_TRUE(said().contains("nothing of the file runs as code") && said().contains("eager replay"))
        << "a run of exported programs and state_dicts says both: " << said().toStdString();
}

// By default the pane replays as the run trained (no --dtype: an exported program's own dtypes and
// the run's autocast); a precision chosen is a what-if.
TEST(ReplayView, ReplaysAsTheRunTrainedUnlessAPrecisionIsChosen)
{
    ReplayView view;
    view.setReplayableSteps({100});
    EXPECT_TRUE(view.request().dtype.isEmpty()) << view.request().dtype.toStdString();
    QComboBox* precision = nullptr;
    for (QComboBox* combo : view.findChildren<QComboBox*>())
        if (combo->findText("float16") >= 0)
            precision = combo;
    ASSERT_NE(precision, nullptr);
    EXPECT_EQ(precision->currentText(), "as trained");
    precision->setCurrentIndex(precision->findText("float16"));
    EXPECT_EQ(view.request().dtype, "float16");
}

TEST(ReplayView, AReplayOfAnotherStepDropsTheTriageOfTheLastOne)
{
    // Issue 27: a triage of step 180 stayed above a later replay of step 100, as if it were its.
    ReplayView view;
    view.setReplayableSteps({100, 180});
    view.chooseStepNear(180);
    TriageReport triage;
    triage.evidence.step = 180;
    TriageReplay replay;
    replay.ran = true;
    replay.loss = 2.5;
    triage.evidence.replays.push_back(replay);
    triage.verdict.label = TriageLabel::Data;
    view.setTriage(triage);
    ASSERT_TRUE(view.triageText().contains("Triage of step 180"));

    QSignalSpy requested(&view, &ReplayView::replayRequested);
    QPushButton* run = nullptr;
    for (QPushButton* button : view.findChildren<QPushButton*>())
        if (button->text() == "Replay")
            run = button;
    ASSERT_NE(run, nullptr);
    run->click(); // the same step: the triage is still its context
    EXPECT_TRUE(view.triageText().contains("Triage of step 180"));
    view.chooseStepNear(100);
    run->click();
    ASSERT_EQ(requested.count(), 2);
    EXPECT_TRUE(view.triageText().isEmpty()) << view.triageText().toStdString();
}

TEST(ReplayView, EveryHeaderReadsWholeAndTheCodeIsInViewAt1280Pixels)
{
    // Issue 27: at 1280x800 a header read "16 headroom (bi" and the code column, last, was cut
    // off at the right edge ("return ...").
    ReplayView view;
    view.resize(1060, 480); // the Replay tab of a 1280x800 window beside the Layers dock
    view.show();
    auto* table = view.findChild<QTableView*>();
    ASSERT_NE(table, nullptr);
    QHeaderView* header = table->horizontalHeader();
    auto headersFit = [&] {
        for (int column = 0; column < header->count(); ++column)
            EXPECT_GE(header->sectionSize(column), header->sectionSizeHint(column))
                << table->model()->headerData(column, Qt::Horizontal).toString().toStdString() << " is cut";
    };
    headersFit(); // before any replay

    ReplayReport report;
    report.dtype = "float32";
    report.mode = "train";
    report.result.step = 180;
    for (int i = 0; i < 6; ++i) {
        ReplayOp op;
        op.index = i;
        op.op = "aten::linear";
        op.module = "encoder.layers.3.self_attn.out_proj";
        op.source = "/home/someone/project/models/transformer.py:214";
        op.code = "attn_output = torch.nn.functional.linear(attn_output, self.out_proj.weight, self.out_proj.bias)";
        TensorStats stats;
        stats.numel = 64;
        stats.min = -3;
        stats.max = 3;
        stats.absmax = 3;
        op.output = stats;
        op.headroom.float16Bits = 14.5;
        op.headroom.dynamicRangeBits = 18.25;
        report.result.ops.push_back(op);
    }
    view.setReport(report);
    QCoreApplication::processEvents();
    headersFit();
    const int codeLeft = header->sectionViewportPosition(ReplayOpModel::Code);
    EXPECT_GE(codeLeft, 0);
    EXPECT_LT(codeLeft + 80, table->viewport()->width()) << "the code column starts in view";
    EXPECT_EQ(table->model()->index(0, ReplayOpModel::Code).data(Qt::ToolTipRole).toString().toStdString(),
              report.result.ops[0].code) << "the whole line in its tooltip";
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

// Issue 28: the list's icons were the view's own judgement of the buffers (with the default floor,
// not the scan's running_var_floor) while the layer tree's came from the scan's incidents.
TEST(BatchNormView, ItsIconsAreTheScansAndItOpensOnTheFirstBadLayerUntilTheUserPicksOne)
{
    auto layer = [](const char* name, bool poisoned) {
        BatchNormSeries series;
        series.name = name;
        series.steps = {0, 1, 2};
        series.meanMin = {-1, -1, -1};
        series.meanMax = {1, 1, 1};
        series.varMin = {0.5, 0.5, 0.5};
        series.varMax = {2, 2, 2};
        series.nonfinite = {0, 0, poisoned ? 3.0 : 0.0};
        return series;
    };
    BatchNormView view;
    view.setSeries({layer("bn1", false), layer("bn2", true), layer("bn3", false)});
    auto* list = view.findChild<QComboBox*>();
    ASSERT_NE(list, nullptr);
    auto iconIs = [&](int index, LayerHealth health) {
        return list->itemIcon(index).pixmap(14).toImage() == LayerTreeModel::healthIcon(health).pixmap(14).toImage();
    };
    EXPECT_TRUE(list->itemIcon(1).isNull()) << "an icon before the scan judged the layers";
    EXPECT_TRUE(view.summary().startsWith("bn1")) << view.summary().toStdString();
    view.setHealth({LayerHealth::Ok, LayerHealth::Bad, LayerHealth::Ok});
    EXPECT_TRUE(iconIs(0, LayerHealth::Ok));
    EXPECT_TRUE(iconIs(1, LayerHealth::Bad));
    EXPECT_TRUE(view.summary().startsWith("bn2: running statistics non-finite from step 2"))
        << view.summary().toStdString();
    // The user picks a layer: a later judgement colours the list but no longer moves it.
    list->setCurrentIndex(2);
    emit list->activated(2);
    view.setHealth({LayerHealth::Bad, LayerHealth::Bad, LayerHealth::Ok});
    EXPECT_TRUE(iconIs(0, LayerHealth::Bad));
    EXPECT_TRUE(view.summary().startsWith("bn3")) << view.summary().toStdString();
    // The run grows: the layer shown stays.
    view.setSeries({layer("bn1", false), layer("bn2", true), layer("bn3", false)});
    EXPECT_TRUE(view.summary().startsWith("bn3")) << view.summary().toStdString();
    EXPECT_TRUE(iconIs(1, LayerHealth::Bad)) << "the icons were lost when the run grew";
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
    // Issue 27: nor does the histogram of step 100's tensor, or its caption.
    for (QCustomPlot* plot : view.findChildren<QCustomPlot*>()) {
        EXPECT_FALSE(plot->xAxis->label().contains("fc1.weight")) << plot->xAxis->label().toStdString();
        EXPECT_EQ(plot->plottableCount(), 0);
    }
    bool saysReading = false;
    for (QLabel* label : view.findChildren<QLabel*>())
        saysReading |= label->text().contains("Reading the checkpoint of step 200");
    EXPECT_TRUE(saysReading);
}

namespace {
// Two parameters of an AdamW state as `nanscope stats --json` would describe them: one healthy, one
// whose gradient vanished (epsilon dominates all of it).
CheckpointOptimizer twoParameterOptimizer()
{
    CheckpointOptimizer optimizer;
    optimizer.summary.path = "/run/checkpoint-200/optimizer.pt";
    optimizer.summary.isAdam = true;
    optimizer.summary.namesMapped = true;
    optimizer.namesFrom = "/run/checkpoint-200/pytorch_model.bin";
    OptimizerGroup group;
    group.lr = 1e-3;
    group.eps = 1e-8;
    group.beta1 = 0.9;
    group.beta2 = 0.999;
    group.weightDecay = 0.0;
    group.parameterIndices = {0, 1};
    optimizer.summary.groups = {group};
    OptimizerParameterState healthy;
    healthy.name = "fc1.weight";
    healthy.shape = {4, 3};
    healthy.hasState = true;
    healthy.step = 200;
    healthy.updateRms = 8e-4;
    healthy.epsilonDominatedShare = 0.0;
    OptimizerParameterState starved = healthy;
    starved.index = 1;
    starved.name = "fc2.bias";
    starved.shape = {2};
    starved.updateRms = 0.0;
    starved.epsilonDominatedShare = 1.0;
    optimizer.summary.parameters = {healthy, starved};
    optimizer.flags = {{}, {"epsilon dominates 100%"}};
    return optimizer;
}
} // namespace

TEST(CheckpointsView, OptimizerTabAppearsOnlyForACheckpointWithAnOptimizerState)
{
    CheckpointsView view;
    view.setCheckpointSteps({100, 200});
    EXPECT_FALSE(view.optimizerTabShown());
    view.setOptimizer(200, twoParameterOptimizer(), QString());
    EXPECT_TRUE(view.optimizerTabShown());
    EXPECT_EQ(view.tabs()->tabText(1), "Optimizer (1 flagged)");
    OptimizerStateModel* model = view.optimizerModel();
    ASSERT_EQ(model->rowCount(), 2);
    EXPECT_EQ(model->index(0, OptimizerStateModel::UpdateToLr).data().toString(), "0.8");
    EXPECT_FALSE(model->index(0, OptimizerStateModel::Name).data(Qt::ForegroundRole).isValid());
    EXPECT_EQ(model->index(1, OptimizerStateModel::EpsilonDominated).data().toString(), "100.0%");
    EXPECT_TRUE(model->index(1, OptimizerStateModel::Name).data(Qt::ForegroundRole).isValid()) << "flagged rows are red";
    EXPECT_TRUE(view.optimizerDescription().contains("lr 0.001, eps 1e-08")) << view.optimizerDescription().toStdString();
    EXPECT_TRUE(view.optimizerDescription().contains("pytorch_model.bin"));

    // Another checkpoint is read: the old optimizer must not pass for the new one's.
    view.chooseStepNear(100);
    EXPECT_FALSE(view.optimizerTabShown());
    EXPECT_EQ(model->rowCount(), 0);
    view.setOptimizer(100, {}, QString());
    EXPECT_FALSE(view.optimizerTabShown()) << "a checkpoint without optimizer state shows no empty tab";

    // One that could not be read says why in the tab.
    view.setOptimizer(100, {}, "optimizer.pt: truncated");
    EXPECT_TRUE(view.optimizerTabShown());
    bool saysWhy = false;
    for (QLabel* label : view.findChildren<QLabel*>())
        saysWhy |= label->text().contains("optimizer.pt: truncated");
    EXPECT_TRUE(saysWhy);
}
