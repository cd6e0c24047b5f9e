#include "CheckpointsView.h"

#include "OptimizerStateModel.h"
#include "RunContext.h"

#include "core/NumberText.h"
#include "TensorStatsModel.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include <cmath>

namespace nanscope {

namespace {
// No bars and no caption: a tensor's name stays on screen only beside its own histogram.
void clearHistogram(QCustomPlot* histogram)
{
    histogram->clearPlottables();
    histogram->xAxis->setLabel(QObject::tr("value"));
    histogram->replot(QCustomPlot::rpQueuedReplot);
}
} // namespace

CheckpointsView::CheckpointsView(QWidget* parent)
    : QWidget(parent)
    , m_step(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_table(new QTableView(this))
    , m_histogram(new QCustomPlot(this))
    , m_model(new TensorStatsModel(this))
    , m_sorted(new QSortFilterProxyModel(this))
    , m_tabs(new QTabWidget(this))
    , m_optimizerText(new QLabel(this))
    , m_optimizerTable(new QTableView(this))
    , m_optimizerModel(new OptimizerStateModel(this))
    , m_optimizerSorted(new QSortFilterProxyModel(this))
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
    // A histogram under 45 px shows nothing: it keeps a readable height however long the table,
    // and the table most of the pane (on a 1024x700 screen, more than five rows).
    m_histogram->setMinimumHeight(120);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    // Long tensor names give way in the middle ("layer4.1…running_var"), not the flag columns.
    m_table->setTextElideMode(Qt::ElideMiddle);
    // A long status line wraps instead of widening the window past a small screen.
    m_status->setWordWrap(true);
    m_tabs->addTab(splitter, tr("Tensors"));

    auto* optimizerPage = new QWidget(this);
    auto* optimizerLayout = new QVBoxLayout(optimizerPage);
    optimizerLayout->setContentsMargins(0, 0, 0, 0);
    m_optimizerText->setWordWrap(true);
    m_optimizerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    optimizerLayout->addWidget(m_optimizerText);
    m_optimizerSorted->setSourceModel(m_optimizerModel);
    m_optimizerSorted->setSortRole(OptimizerStateModel::SortRole);
    m_optimizerTable->setModel(m_optimizerSorted);
    m_optimizerTable->setSortingEnabled(true);
    m_optimizerTable->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder); // the optimizer's order
    m_optimizerTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_optimizerTable->verticalHeader()->hide();
    m_optimizerTable->horizontalHeader()->setStretchLastSection(true);
    optimizerLayout->addWidget(m_optimizerTable, 1);
    m_tabs->addTab(optimizerPage, tr("Optimizer"));
    m_tabs->setTabVisible(1, false); // until a checkpoint with an optimizer state is shown
    layout->addWidget(m_tabs, 1);
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
    showIndex(best);
}

void CheckpointsView::showCheckpoint(qint64 step, const QString& why)
{
    const int index = m_step->findData(step);
    if (index < 0)
        return;
    m_reason = why;
    m_reasonStep = step;
    if (m_step->itemData(index).toLongLong() == m_shownStep) {
        if (m_model->rowCount() > 0)
            m_status->setText(summary());
        return;
    }
    showIndex(index);
}

void CheckpointsView::showIndex(int index)
{
    if (index >= 0 && m_step->itemData(index).toLongLong() != m_shownStep) {
        m_step->setCurrentIndex(index);
        const qint64 wanted = m_step->itemData(index).toLongLong();
        // The old checkpoint's rows would read as the new one's while the child reads the file.
        m_shownStep = wanted;
        m_model->setTensors({});
        clearOptimizer();
        clearHistogram(m_histogram);
        m_status->setText(tr("Reading the checkpoint of step %1…").arg(wanted));
        emit checkpointRequested(wanted);
    }
}

void CheckpointsView::setTensors(qint64 step, const std::vector<CheckpointTensor>& tensors, const QString& error)
{
    m_shownStep = step;
    m_model->setTensors(tensors);
    m_table->resizeColumnsToContents();
    // The name and shape columns give way so that NaN, Inf and the flags stay in view.
    const int nameWidth = std::max(140, m_table->viewport()->width() / 4);
    if (m_table->columnWidth(TensorStatsModel::Name) > nameWidth)
        m_table->setColumnWidth(TensorStatsModel::Name, nameWidth);
    if (m_table->columnWidth(TensorStatsModel::Shape) > 120)
        m_table->setColumnWidth(TensorStatsModel::Shape, 120);
    m_status->setText(error.isEmpty() ? summary() : QString("<span style='color:#b00020'>%1</span>").arg(error.toHtmlEscaped()));
    if (!tensors.empty())
        m_table->selectRow(0);
}

void CheckpointsView::setOptimizer(qint64 step, const CheckpointOptimizer& optimizer, const QString& error)
{
    m_shownStep = step; // setTensors follows with the same step
    const bool present = !optimizer.summary.path.empty() || !error.isEmpty();
    m_optimizerModel->setOptimizer(optimizer);
    m_optimizerTable->resizeColumnsToContents();
    const int flagged = optimizer.flaggedCount();
    m_tabs->setTabText(1, flagged > 0 ? tr("Optimizer (%1 flagged)").arg(flagged) : tr("Optimizer"));
    const QColor tabText = flagged > 0 ? QColor(200, 20, 20) : m_tabs->tabBar()->palette().color(QPalette::WindowText);
    m_tabs->tabBar()->setTabTextColor(1, tabText); // red, so flags are seen from the Tensors tab
    m_tabs->setTabVisible(1, present);
    if (!error.isEmpty()) {
        m_optimizerText->setText(
            QString("<span style='color:#b00020'>%1</span>").arg(tr("Optimizer state not read: %1").arg(error).toHtmlEscaped()));
        return;
    }
    m_optimizerText->setText(optimizerDescription());
}

bool CheckpointsView::optimizerTabShown() const
{
    return m_tabs->isTabVisible(1);
}

QString CheckpointsView::optimizerDescription() const
{
    const CheckpointOptimizer& optimizer = m_optimizerModel->optimizer();
    const OptimizerStateSummary& summary = optimizer.summary;
    if (summary.path.empty())
        return {};
    const auto figure = [](const std::optional<double>& v) { return v ? QString::fromStdString(numberText(*v, 4)) : QString("\u2014"); };
    QStringList lines;
    lines << tr("<b>%1</b>: %2, %3 parameters")
                 .arg(QString::fromStdString(summary.path).toHtmlEscaped())
                 .arg(summary.isAdam ? tr("Adam-family optimizer state") : tr("not an Adam-family optimizer"))
                 .arg(summary.parameters.size());
    lines << (summary.namesMapped
                  ? tr("Names from %1.").arg(QString::fromStdString(optimizer.namesFrom).toHtmlEscaped())
                  : tr("Named by the optimizer's index and shape: the checkpoint does not say which model parameter each "
                       "one is (see the notes)."));
    for (size_t g = 0; g < summary.groups.size(); ++g) {
        const OptimizerGroup& group = summary.groups[g];
        lines << tr("Group %1: lr %2, eps %3, betas %4, %5; weight decay %6; %7 parameters")
                     .arg(g)
                     .arg(figure(group.lr), figure(group.eps), figure(group.beta1), figure(group.beta2),
                          figure(group.weightDecay))
                     .arg(group.parameterIndices.size());
    }
    for (const std::string& warning : summary.warnings)
        lines << QString("<span style='color:#b00020'>%1</span>").arg(QString::fromStdString(warning).toHtmlEscaped());
    for (const std::string& note : summary.notes)
        lines << QString("<span style='color:#555'>%1</span>").arg(QString::fromStdString(note).toHtmlEscaped());
    return lines.join("<br>");
}

void CheckpointsView::clearOptimizer()
{
    m_optimizerModel->setOptimizer({});
    m_optimizerText->clear();
    m_tabs->setTabVisible(1, false);
}

QString CheckpointsView::summary() const
{
    int bad = 0, buffers = 0;
    for (const auto& t : m_model->tensors()) {
        bad += t.isBad();
        buffers += batchnorm::isRunningStatisticName(t.stats.name);
    }
    QString text = tr("Step %1: %2 tensors (%3 BatchNorm buffers), %4 flagged").arg(m_shownStep).arg(m_model->rowCount()).arg(buffers).arg(bad);
    if (m_reasonStep == m_shownStep && !m_reason.isEmpty())
        text += tr(" — %1").arg(m_reason);
    if (!m_optimizerModel->optimizer().summary.path.empty())
        text += tr("; optimizer state: %1 of %2 parameters flagged")
                    .arg(m_optimizerModel->optimizer().flaggedCount())
                    .arg(m_optimizerModel->rowCount());
    return text;
}

void CheckpointsView::showHistogram(int row)
{
    m_histogram->clearPlottables();
    if (row < 0 || row >= int(m_model->tensors().size())) {
        m_histogram->replot();
        return;
    }
    const TensorStats& t = m_model->tensors()[size_t(row)].stats;
    const QString name = QString::fromStdString(t.name);
    if (!t.histogram.empty() && t.min && t.max) {
        auto* bars = new QCPBars(m_histogram->xAxis, m_histogram->yAxis);
        const double width = (*t.max - *t.min) / double(t.histogram.size());
        QVector<double> x, y;
        for (size_t i = 0; i < t.histogram.size(); ++i) {
            x << *t.min + width * (double(i) + 0.5);
            y << double(t.histogram[i]);
        }
        bars->setWidth(width > 0 ? width : 1);
        bars->setData(x, y);
        bars->setBrush(QColor(37, 99, 235, 150));
        bars->setName(name);
        m_histogram->rescaleAxes();
    }
    m_histogram->xAxis->setLabel(tr("value of %1 (%2 NaN, %3 Inf not counted)").arg(name).arg(t.nan).arg(t.inf()));
    m_histogram->replot(QCustomPlot::rpQueuedReplot);
}

void CheckpointsView::clear()
{
    m_reason.clear();
    m_reasonStep = -1;
    m_step->blockSignals(true);
    m_step->clear();
    m_step->blockSignals(false);
    m_shownStep = -1;
    m_model->setTensors({});
    clearOptimizer();
    m_status->clear();
    clearHistogram(m_histogram);
}

void CheckpointsView::follow(const RunContext* context)
{
    auto show = [this, context](const RunSnapshot& snapshot) {
        const std::vector<int64_t> saved = snapshot.checkpointSteps();
        const std::vector<qint64> steps(saved.begin(), saved.end());
        setCheckpointSteps(steps);
        const qint64 near = context->selectedStep() >= 0 ? context->selectedStep() : context->startStep();
        if (!steps.empty())
            chooseStepNear(near >= 0 ? near : steps.back());
    };
    connect(context, &RunContext::runClosed, this, &CheckpointsView::clear);
    connect(context, &RunContext::runLoaded, this, show);
    connect(context, &RunContext::runGrew, this, show);
    connect(context, &RunContext::stepSelected, this, &CheckpointsView::chooseStepNear);
}

} // namespace nanscope
