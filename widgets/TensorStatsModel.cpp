#include "TensorStatsModel.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace nanscope {

namespace {
QVariant number(double v)
{
    return std::isfinite(v) ? QVariant(QString::number(v, 'g', 4)) : QVariant(QString("\u2014"));
}
} // namespace

TensorStatsModel::TensorStatsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void TensorStatsModel::setTensors(const std::vector<TensorRow>& tensors)
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
    const TensorRow& t = m_tensors[size_t(index.row())];
    const bool bad = t.nan + t.inf > 0 || !t.flags.isEmpty();
    if (role == RowRole)
        return index.row();
    if (role == Qt::ForegroundRole)
        return bad ? QBrush(QColor(200, 20, 20)) : QVariant();
    if (role == Qt::ToolTipRole)
        return t.isNormBuffer() ? tr("BatchNorm running statistic: a buffer, not a parameter") : t.flags.join("; ");
    if (role == SortRole) {
        switch (Column(index.column())) {
        case Min: return t.min;
        case Max: return t.max;
        case Mean: return t.mean;
        case Std: return t.std;
        case Norm: return t.norm;
        case NaN: return t.nan;
        case Inf: return t.inf;
        case Update: return t.relativeUpdate;
        default: return data(index, Qt::DisplayRole);
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (Column(index.column())) {
    case Name: return t.isNormBuffer() ? t.name + QString::fromUtf8("  [BN buffer]") : t.name;
    case Shape: return t.shape;
    case DType: return t.dtype;
    case Min: return number(t.min);
    case Max: return number(t.max);
    case Mean: return number(t.mean);
    case Std: return number(t.std);
    case Norm: return number(t.norm);
    case NaN: return t.nan;
    case Inf: return t.inf;
    case Update:
        // An update into NaN is no small update: say what happened instead of a number.
        return t.becameNonfinite > 0 ? tr("%1 became NaN/Inf").arg(t.becameNonfinite) : number(t.relativeUpdate);
    case Flags: return t.flags.join("; ");
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
