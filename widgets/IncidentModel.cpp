#include "IncidentModel.h"

#include "RunContext.h"

#include <QBrush>
#include <QColor>
#include <QIcon>
#include <QPainter>
#include <QPixmap>

namespace nanscope {

namespace {
QColor severityColour(nanscope::Severity severity)
{
    switch (severity) {
    case nanscope::Severity::Critical: return QColor(210, 30, 30);
    case nanscope::Severity::Warning: return QColor(230, 150, 0);
    case nanscope::Severity::Info: return QColor(60, 120, 220);
    }
    return Qt::gray;
}

QIcon severityIcon(nanscope::Severity severity)
{
    QPixmap pixmap(14, 14);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setBrush(severityColour(severity));
    painter.setPen(Qt::NoPen);
    painter.drawRoundedRect(1, 1, 12, 12, 3, 3);
    return QIcon(pixmap);
}
} // namespace

IncidentModel::IncidentModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void IncidentModel::setReport(const ScanReport& report)
{
    beginResetModel();
    m_report = report;
    endResetModel();
}

const Incident* IncidentModel::incidentAt(int row) const
{
    return row >= 0 && row < int(m_report.incidents.size()) ? &m_report.incidents[size_t(row)] : nullptr;
}

int IncidentModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_report.incidents.size());
}

int IncidentModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant IncidentModel::data(const QModelIndex& index, int role) const
{
    const Incident* incident = index.isValid() ? incidentAt(index.row()) : nullptr;
    if (!incident)
        return {};
    switch (role) {
    case OnsetStepRole:
        return qint64(incident->onsetStep);
    case EndStepRole:
        return qint64(incidentEndStep(*incident));
    case FirstLayerRole:
        return incident->layers.empty() ? QString() : QString::fromStdString(incident->layers.front());
    case IncidentIndexRole:
        return index.row();
    case RankRole:
        return incident->rank ? *incident->rank : -1;
    case Qt::DecorationRole:
        return index.column() == Severity ? severityIcon(incident->severity) : QVariant();
    case Qt::ToolTipRole:
        return QString::fromStdString(incident->cause + "\n\n" + incident->suggestion);
    case Qt::DisplayRole:
        switch (Column(index.column())) {
        case Severity: return QString(toString(incident->severity));
        case Kind: return QString(toString(incident->kind));
        case Pattern: return incident->pattern ? QString(toString(*incident->pattern)) : QString();
        case Onset: return qint64(incident->onsetStep);
        case Rank: return incident->rank ? QVariant(*incident->rank) : QVariant();
        case Nonfinite: return incident->nonfiniteStep ? QVariant(qint64(*incident->nonfiniteStep)) : QVariant();
        case Layers: {
            QStringList names;
            for (size_t i = 0; i < incident->layers.size() && i < 3; ++i)
                names << QString::fromStdString(incident->layers[i]);
            if (incident->layers.size() > 3)
                names << QString("+%1").arg(incident->layers.size() - 3);
            return names.join(", ");
        }
        case Cause: return QString::fromStdString(incident->cause);
        case ColumnCount: break;
        }
        return {};
    default:
        return {};
    }
}

QVariant IncidentModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* titles[] = {"severity", "kind", "pattern", "onset", "rank", "non-finite at", "layers (first bad first)", "cause"};
    return section >= 0 && section < ColumnCount ? tr(titles[section]) : QVariant();
}

void IncidentModel::follow(const RunContext* context)
{
    connect(context, &RunContext::runClosed, this, [this] { setReport(ScanReport()); });
    connect(context, &RunContext::scanChanged, this, &IncidentModel::setReport);
}

} // namespace nanscope
