#include "CheckpointsView.h"

#include "TensorStatsModel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

namespace nanscope {

CheckpointsView::CheckpointsView(QWidget* parent)
    : QWidget(parent)
    , m_step(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_table(new QTableView(this))
    , m_histogram(new QCustomPlot(this))
    , m_model(new TensorStatsModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
{
    auto* layout = new QVBoxLayout(this);
    auto* header = new QHBoxLayout();
    header->addWidget(new QLabel(tr("Checkpoint at step:"), this));
    header->addWidget(m_step);
    header->addSpacing(12);
    header->addWidget(m_status, 1);
    layout->addLayout(header);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(TensorStatsModel::SortRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder); // file order until the user sorts
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    splitter->addWidget(m_table);
    splitter->addWidget(m_histogram);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);
    m_histogram->xAxis->setLabel(tr("value"));
    m_histogram->yAxis->setLabel(tr("count"));
    m_status->setText(tr("Tensor statistics are read without running code from the file."));

    connect(m_step, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { emit checkpointRequested(m_step->itemData(index).toLongLong()); });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& index) {
        showHistogram(m_sorted->mapToSource(index).row());
    });
}

void CheckpointsView::setCheckpointSteps(const std::vector<qint64>& steps)
{
    m_step->clear();
    for (qint64 s : steps)
        m_step->addItem(QString::number(s), s);
}

void CheckpointsView::chooseStepNear(qint64 step)
{
    int best = m_step->count() > 0 ? 0 : -1;
    for (int i = 0; i < m_step->count(); ++i)
        if (m_step->itemData(i).toLongLong() <= step)
            best = i;
    if (best >= 0 && m_step->itemData(best).toLongLong() != m_shownStep) {
        m_step->setCurrentIndex(best);
        const qint64 wanted = m_step->itemData(best).toLongLong();
        // The old checkpoint's rows would read as the new one's while the child reads the file.
        m_shownStep = wanted;
        m_model->setTensors({});
        m_status->setText(tr("Reading the checkpoint of step %1…").arg(wanted));
        emit checkpointRequested(wanted);
    }
}

void CheckpointsView::setTensors(qint64 step, const std::vector<TensorRow>& tensors, const QString& error)
{
    m_shownStep = step;
    m_model->setTensors(tensors);
    m_table->resizeColumnsToContents();
    m_status->setText(error.isEmpty() ? summary() : QString("<span style='color:#b00020'>%1</span>").arg(error.toHtmlEscaped()));
    if (!tensors.empty())
        m_table->selectRow(0);
}

QString CheckpointsView::summary() const
{
    int bad = 0, buffers = 0;
    for (const auto& t : m_model->tensors()) {
        bad += t.nan + t.inf > 0 || !t.flags.isEmpty();
        buffers += t.isNormBuffer();
    }
    return tr("Step %1: %2 tensors (%3 BatchNorm buffers), %4 flagged").arg(m_shownStep).arg(m_model->rowCount()).arg(buffers).arg(bad);
}

void CheckpointsView::showHistogram(int row)
{
    m_histogram->clearPlottables();
    if (row < 0 || row >= int(m_model->tensors().size())) {
        m_histogram->replot();
        return;
    }
    const TensorRow& t = m_model->tensors()[size_t(row)];
    if (!t.histogram.empty() && std::isfinite(t.min) && std::isfinite(t.max)) {
        auto* bars = new QCPBars(m_histogram->xAxis, m_histogram->yAxis);
        const double width = (t.max - t.min) / double(t.histogram.size());
        QVector<double> x, y;
        for (size_t i = 0; i < t.histogram.size(); ++i) {
            x << t.min + width * (double(i) + 0.5);
            y << double(t.histogram[i]);
        }
        bars->setWidth(width > 0 ? width : 1);
        bars->setData(x, y);
        bars->setBrush(QColor(37, 99, 235, 150));
        bars->setName(t.name);
        m_histogram->rescaleAxes();
    }
    m_histogram->xAxis->setLabel(tr("value of %1 (%2 NaN, %3 Inf not counted)").arg(t.name).arg(t.nan).arg(t.inf));
    m_histogram->replot(QCustomPlot::rpQueuedReplot);
}

void CheckpointsView::clear()
{
    m_step->blockSignals(true);
    m_step->clear();
    m_step->blockSignals(false);
    m_shownStep = -1;
    m_model->setTensors({});
    m_status->clear();
    m_histogram->clearPlottables();
    m_histogram->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace nanscope
