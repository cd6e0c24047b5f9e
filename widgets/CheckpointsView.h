#pragma once

#include "ViewData.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace nanscope {

class TensorStatsModel;

// A checkpoint's tensors: a sortable statistics table (non-finite in red, BatchNorm buffers
// marked), the histogram of the selected tensor, and the update against the previous checkpoint.
class CheckpointsView : public QWidget
{
    Q_OBJECT
public:
    explicit CheckpointsView(QWidget* parent = nullptr);

    void setCheckpointSteps(const std::vector<qint64>& steps);
    void chooseStepNear(qint64 step);
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    void setTensors(qint64 step, const std::vector<TensorRow>& tensors, const QString& error);
    void showHistogram(int row);
    TensorStatsModel* model() const { return m_model; }
    QSortFilterProxyModel* sorted() const { return m_sorted; }
    QString summary() const;

signals:
    void checkpointRequested(qint64 step);

private:
    QComboBox* m_step = nullptr;
    QLabel* m_status = nullptr;
    QTableView* m_table = nullptr;
    QCustomPlot* m_histogram = nullptr;
    TensorStatsModel* m_model = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    qint64 m_shownStep = -1;
};

} // namespace nanscope
