#include "TensorStatsModel.h"

#include "core/NumberText.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace nanscope {

namespace {
QVariant number(double v)
{
    // Non-finite values are counted in their own columns (NaN, Inf): the cell shows a dash.
    return std::isfinite(v) ? QVariant(QString::fromStdString(numberText(v, 4))) : QVariant(QString("\u2014"));
}

double orNan(const std::optional<double>& v)
{
    return v ? *v : std::nan("");
}

QString joined(const std::vector<std::string>& parts)
{
    QStringList list;
    for (const auto& p : parts)
        list << QString::fromStdString(p);
    return list.join("; ");
}

bool isNormBuffer(const std::string& name)
{
    return batchnorm::isRunningStatisticName(name);
}
} // namespace

TensorStatsModel::TensorStatsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void TensorStatsModel::setTensors(const std::vector<CheckpointTensor>& tensors)
{
    beginResetModel();
    m_tensors = tensors;
    endResetModel();
}

int TensorStatsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_tensors.size());
}

int TensorStatsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TensorStatsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_tensors.size()))
        return {};
    const CheckpointTensor& row = m_tensors[size_t(index.row())];
    const TensorStats& t = row.stats;
    const bool normBuffer = isNormBuffer(t.name);
    const double relativeUpdate = row.update && row.update->relativeUpdate ? *row.update->relativeUpdate : std::nan("");
    const int64_t becameNonfinite = row.update ? row.update->becameNonfinite : 0;
    const QString flags = joined(row.flags);
    if (role == RowRole)
        return index.row();
    if (role == Qt::ForegroundRole)
        return row.isBad() ? QBrush(QColor(200, 20, 20)) : QVariant();
    if (role == Qt::ToolTipRole)
        return normBuffer ? tr("BatchNorm running statistic: a buffer, not a parameter") : flags;
    if (role == SortRole) {
        switch (Column(index.column())) {
        case Min: return orNan(t.min);
        case Max: return orNan(t.max);
        case Mean: return orNan(t.mean);
        case Std: return orNan(t.std);
        case Norm: return t.norm;
        case NaN: return qint64(t.nan);
        case Inf: return qint64(t.inf());
        case Update: return relativeUpdate;
        default: return data(index, Qt::DisplayRole);
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (Column(index.column())) {
    case Name: return normBuffer ? row.name() + QString::fromUtf8("  [BN buffer]") : row.name();
    case Shape: return QString::fromStdString(shapeText(t.shape));
    case DType: return QString(dtypeName(t.dtype));
    case Min: return number(orNan(t.min));
    case Max: return number(orNan(t.max));
    case Mean: return number(orNan(t.mean));
    case Std: return number(orNan(t.std));
    // The norm is over the finite elements: with none (an all-NaN tensor) there is no norm, not 0.
    case Norm: return t.min ? number(t.norm) : number(std::nan(""));
    case NaN: return qint64(t.nan);
    case Inf: return qint64(t.inf());
    case Update:
        // An update into NaN is no small update: say what happened instead of a number.
        return becameNonfinite > 0 ? tr("%1 became NaN/Inf").arg(becameNonfinite) : number(relativeUpdate);
    case Flags: return flags;
    case ColumnCount: break;
    }
    return {};
}

QVariant TensorStatsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* titles[] = {"tensor", "shape", "dtype", "min", "max", "mean", "std", "L2 norm", "NaN", "Inf",
                                   "update vs previous", "flags"};
    return section >= 0 && section < ColumnCount ? tr(titles[section]) : QVariant();
}

} // namespace nanscope
