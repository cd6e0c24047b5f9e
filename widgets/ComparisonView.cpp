#include "ComparisonView.h"

#include "ComparedRunsOverlay.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace nanscope {

namespace {
constexpr int kStepRole = Qt::UserRole + 1;

QString letter(size_t run)
{
    return run < 26 ? QString(QChar('A' + int(run))) : QString("R%1").arg(run + 1);
}

QTreeWidgetItem* row(QTreeWidgetItem* parent, const QString& what, std::optional<int64_t> step, const QString& details)
{
    auto* item = new QTreeWidgetItem(parent, {what, step ? QString::number(*step) : QString("-"), details});
    if (step)
        item->setData(0, kStepRole, qint64(*step));
    item->setToolTip(2, details);
    return item;
}
} // namespace

ComparisonView::ComparisonView(QWidget* parent)
    : QWidget(parent)
    , m_message(new QLabel(this))
    , m_tree(new QTreeWidget(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_message->setWordWrap(true);
    m_message->setMargin(4);
    m_message->hide();
    layout->addWidget(m_message);
    m_tree->setObjectName("comparison.tree");
    m_tree->setColumnCount(3);
    m_tree->setHeaderLabels({tr("Run / series / incident"), tr("Step"), tr("What differs")});
    m_tree->header()->setStretchLastSection(true);
    m_tree->setUniformRowHeights(true);
    m_tree->setRootIsDecorated(true);
    layout->addWidget(m_tree, 1);
    connect(m_tree, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
        const QVariant step = item->data(0, kStepRole);
        if (step.isValid())
            emit stepActivated(step.toLongLong());
    });
}

void ComparisonView::setMessage(const QString& message)
{
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty());
}

void ComparisonView::clear()
{
    m_tree->clear();
    setMessage(QString());
}

void ComparisonView::setComparison(const RunComparison& comparison)
{
    m_tree->clear();
    if (comparison.runs.empty())
        return;
    const std::string a = letter(0).toStdString();
    for (const RunPairComparison& pair : comparison.pairs) {
        const ComparedRun& other = comparison.runs[pair.otherRun];
        const std::string b = letter(pair.otherRun).toStdString();
        const SeriesDivergence* first = pair.firstDivergence();
        auto* top = new QTreeWidgetItem(m_tree, {ComparedRunsOverlay::runName(other, pair.otherRun) + tr(" vs A"),
                                                 first ? QString::number(*first->step) : QString("-"),
                                                 first ? tr("diverges first in %1").arg(QString::fromStdString(first->series))
                                                       : tr("no series diverges")});
        top->setForeground(0, ComparedRunsOverlay::runColour(pair.otherRun));
        top->setToolTip(0, QString::fromStdString(other.label));
        if (first)
            top->setData(0, kStepRole, qint64(*first->step));
        auto* series = new QTreeWidgetItem(top, {tr("Divergence"), QString(), QString()});
        for (const SeriesDivergence& d : pair.series)
            row(series, QString::fromStdString(d.series), d.step,
                QString::fromStdString(divergenceWords(d, d.leavingRun == 0 ? a : b, d.leavingRun == 0 ? b : a)));
        auto* incidents = new QTreeWidgetItem(top, {tr("Incidents"), QString(), pair.incidents.empty() ? tr("none in either run") : QString()});
        for (const IncidentDifference& d : pair.incidents) {
            const QString where = d.presence == IncidentPresence::Both ? tr("both")
                                  : d.presence == IncidentPresence::OnlyReference ? tr("only A")
                                                                                  : tr("only %1").arg(QString::fromStdString(b));
            const Incident& shown = d.reference ? *d.reference : *d.other;
            row(incidents, QString("%1 (%2)").arg(toString(d.kind), where), shown.onsetStep,
                QString::fromStdString(incidentDifferenceWords(d, a, b)));
        }
        for (const std::string& note : pair.notes)
            row(top, tr("note"), std::nullopt, QString::fromStdString(note));
        top->setExpanded(true);
        series->setExpanded(true);
        incidents->setExpanded(true);
    }
    m_tree->resizeColumnToContents(0);
    m_tree->resizeColumnToContents(1);
}

} // namespace nanscope
