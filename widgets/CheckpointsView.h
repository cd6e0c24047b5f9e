#pragma once

#include "ViewData.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;

namespace nanscope {

class RunContext;
class OptimizerStateModel;
class TensorStatsModel;

// A checkpoint's tensors: a sortable statistics table (non-finite in red, BatchNorm buffers
// marked), the histogram of the selected tensor, and the update against the previous checkpoint.
// When the checkpoint holds an optimizer state, an Optimizer tab beside them: its param groups,
// a row per parameter (Adam's update against lr, epsilon domination, the moments) and its notes.
class CheckpointsView : public QWidget
{
    Q_OBJECT
public:
    explicit CheckpointsView(QWidget* parent = nullptr);

    // Lists the checkpoints of the run `context` holds and follows it (runClosed, runLoaded,
    // runGrew, stepSelected): the one shown is the latest at or before the selected step, else the
    // start step, else the last one.
    void follow(const RunContext* context);
    void setCheckpointSteps(const std::vector<qint64>& steps);
    void chooseStepNear(qint64 step);
    // Shows checkpoint `step`, saying `why` beside its figures (an incident's damage first seen in
    // it: core/scan/IncidentCheckpoint); another step chosen afterwards drops the reason.
    void showCheckpoint(qint64 step, const QString& why);
    qint64 shownStep() const { return m_shownStep; }
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    void setTensors(qint64 step, const std::vector<CheckpointTensor>& tensors, const QString& error);
    // An optimizer with an empty summary.path: the checkpoint holds none, and the tab is hidden.
    void setOptimizer(qint64 step, const CheckpointOptimizer& optimizer, const QString& error);
    void showHistogram(int row);
    TensorStatsModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QSortFilterProxyModel* sorted() const { return m_sorted; }
    QString summary() const;
    OptimizerStateModel* optimizerModel() const { return m_optimizerModel; }
    QTabWidget* tabs() const { return m_tabs; }
    bool optimizerTabShown() const;
    // The text above the optimizer table: groups, where the names came from, notes and warnings.
    QString optimizerDescription() const;

signals:
    void checkpointRequested(qint64 step);

private:
    QComboBox* m_step = nullptr;
    QLabel* m_status = nullptr;
    QTableView* m_table = nullptr;
    QCustomPlot* m_histogram = nullptr;
    TensorStatsModel* m_model = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    QTabWidget* m_tabs = nullptr;
    QLabel* m_optimizerText = nullptr;
    QTableView* m_optimizerTable = nullptr;
    OptimizerStateModel* m_optimizerModel = nullptr;
    QSortFilterProxyModel* m_optimizerSorted = nullptr;
    qint64 m_shownStep = -1;
    qint64 m_reasonStep = -1; // the step m_reason is said of
    QString m_reason;

    void clearOptimizer();
    void showIndex(int index);
};

} // namespace nanscope
