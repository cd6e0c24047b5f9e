#include "OptimizerStateModel.h"

#include "core/NumberText.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace nanscope {

namespace {

double orNan(const std::optional<double>& v)
{
    return v ? *v : std::nan("");
}

QVariant number(const std::optional<double>& v)
{
    return v && std::isfinite(*v) ? QVariant(QString::fromStdString(numberText(*v, 4))) : QVariant(QString("\u2014"));
}

} // namespace

OptimizerStateModel::OptimizerStateModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void OptimizerStateModel::setOptimizer(const CheckpointOptimizer& optimizer)
{
    beginResetModel();
    m_optimizer = optimizer;
    m_optimizer.flags.resize(m_optimizer.summary.parameters.size()); // one (maybe empty) list per row
    endResetModel();
}

int OptimizerStateModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_optimizer.summary.parameters.size());
}

int OptimizerStateModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant OptimizerStateModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const size_t row = size_t(index.row());
    const OptimizerParameterState& p = m_optimizer.summary.parameters[row];
    const OptimizerGroup* group = m_optimizer.groupOf(p);
    const std::optional<double> updateToLr = group ? updateToLearningRate(p, *group) : std::nullopt;
    QStringList flags;
    for (const std::string& flag : m_optimizer.flags[row])
        flags << QString::fromStdString(flag);

    if (role == Qt::ForegroundRole)
        return flags.isEmpty() && p.nonfinite == 0 ? QVariant() : QVariant(QBrush(QColor(200, 20, 20)));
    if (role == Qt::ToolTipRole) {
        if (!p.hasState)
            return tr("No optimizer state yet: no gradient reached this parameter before the save");
        return flags.join("\n");
    }
    if (role == SortRole) {
        switch (Column(index.column())) {
        case Group: return qint64(p.group);
        case Step: return orNan(p.step);
        case UpdateRms: return orNan(p.updateRms);
        case UpdateToLr: return orNan(updateToLr);
        case EpsilonDominated: return orNan(p.epsilonDominatedShare);
        case ExpAvgRms: return orNan(p.expAvgRms);
        case ExpAvgSqRootRms: return orNan(p.expAvgSqRootRms);
        case Nonfinite: return qint64(p.nonfinite);
        default: return data(index, Qt::DisplayRole);
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (Column(index.column())) {
    case Name: return QString::fromStdString(p.name);
    case Shape: return p.hasState ? QString::fromStdString(shapeText(p.shape)) : QString("\u2014");
    case Group: return qint64(p.group);
    case Step: return p.step ? QVariant(QString::number(*p.step, 'f', 0)) : QVariant(QString("\u2014"));
    case UpdateRms: return number(p.updateRms);
    case UpdateToLr: return number(updateToLr);
    case EpsilonDominated:
        return p.epsilonDominatedShare ? QVariant(QString::number(*p.epsilonDominatedShare * 100, 'f', 1) + "%")
                                       : QVariant(QString("\u2014"));
    case ExpAvgRms: return number(p.expAvgRms);
    case ExpAvgSqRootRms: return number(p.expAvgSqRootRms);
    case Nonfinite: return qint64(p.nonfinite);
    case Flags: return p.hasState ? flags.join("; ") : tr("no state yet");
    case ColumnCount: break;
    }
    return {};
}

QVariant OptimizerStateModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* titles[] = {"parameter", "shape", "group", "step", "update RMS", "update / lr",
                                   "eps-dominated", "exp_avg RMS", "sqrt(exp_avg_sq) RMS", "NaN/Inf", "flags"};
    static const char* tips[] = {
        "The model's name, or the optimizer's index and shape where the checkpoint cannot name it",
        "",
        "The param group (its lr, eps and betas are listed above the table)",
        "Adam's step count for this parameter",
        "RMS of the last update Adam applied: lr * m_hat / (sqrt(v_hat) + eps), weight decay aside",
        "The update's RMS in units of lr: about 1 while the gradient is steady, far below when the parameter "
        "stalled, above when the latest gradients outgrew their history (a spike)",
        "Share of elements where sqrt(v_hat) <= eps: there eps, not the gradient's size, sets the step",
        "RMS of exp_avg, the first moment",
        "sqrt(mean(exp_avg_sq)): the gradient's typical size as Adam sees it",
        "NaN and Inf elements in exp_avg and exp_avg_sq: the next step carries them into the weights",
        "What nanscope stats flagged"};
    if (section < 0 || section >= ColumnCount)
        return {};
    return role == Qt::DisplayRole ? tr(titles[section]) : tr(tips[section]);
}

} // namespace nanscope
