#include "ReplayOpModel.h"

#include "core/tensor/FloatLimits.h"
#include "core/NumberText.h"

#include "core/replay/ReplaySignatures.h"

#include <QBrush>
#include <QColor>
#include <QFontDatabase>

#include <cmath>

namespace nanscope {


QString shortSource(const QString& source)
{
    // ".../site-packages/transformers/models/gpt2/modeling_gpt2.py:312" -> "gpt2/modeling_gpt2.py:312":
    // the file and line say where; a long path would push the NaN and Inf columns off the pane.
    const QStringList parts = source.split('/');
    return parts.size() <= 2 ? source : QString::fromUtf8("\u2026/") + parts.mid(parts.size() - 2).join('/');
}

namespace {
QString number(double v)
{
    // A cell without a finite figure is blank-like; the op's NaN and Inf counts are columns of their own.
    return std::isfinite(v) ? QString::fromStdString(numberText(v, 4)) : QString("\u2014");
}

QString number(const std::optional<double>& v)
{
    return v ? number(*v) : QString("\u2014");
}

QString bits(const std::optional<double>& v)
{
    return v ? QString::number(*v, 'f', 1) : QString();
}
} // namespace

ReplayOpModel::ReplayOpModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void ReplayOpModel::setReport(const ReplayReport& report)
{
    beginResetModel();
    m_ops = report.result.ops;
    m_culprit = report.firstNonfiniteIndex();

    endResetModel();
}

int ReplayOpModel::rowOfOp(int opIndex) const
{
    for (size_t i = 0; i < m_ops.size(); ++i)
        if (m_ops[i].index == opIndex)
            return int(i);
    return -1;
}

int ReplayOpModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_ops.size());
}

int ReplayOpModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ReplayOpModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_ops.size()))
        return {};
    const ReplayOp& op = m_ops[size_t(index.row())];
    const bool culprit = op.index == m_culprit;
    switch (role) {
    case OpIndexRole:
        return op.index;
    case IsCulpritRole:
        return culprit;
    case IsFlaggedRole:
        return isFlagged(index.row(), Column(index.column()));
    case ModuleRole:
        return QString::fromStdString(op.module);
    case Qt::BackgroundRole:
        return culprit ? QBrush(QColor(255, 205, 205)) : QVariant();
    case Qt::ForegroundRole:
        if (culprit)
            return QBrush(QColor(20, 20, 20)); // readable on the pink row in a dark palette too
        if (op.output && ((index.column() == NaN && op.output->nan > 0) || (index.column() == Inf && op.output->inf() > 0)))
            return QBrush(QColor(200, 20, 20));
        if (isFlagged(index.row(), Column(index.column())))
            return QBrush(QColor(200, 20, 20));
        return {};
    case Qt::FontRole:
        return index.column() == Code ? QFontDatabase::systemFont(QFontDatabase::FixedFont) : QVariant();
    case Qt::ToolTipRole:
        if (index.column() == Source && !op.source.empty()) // the whole path, the cell shows its end
            return QString::fromStdString(op.source) + (op.code.empty() ? QString() : "\n" + QString::fromStdString(op.code));
        if (index.column() == Code && !op.code.empty())
            return QString::fromStdString(op.code); // the source line's text, where the cell only has room for file:line
        if (index.column() == Float16Headroom && op.headroom.float16Bits)
            return tr("max |x| %1: %2 bits below float16's largest value (%4), %3 below bfloat16's")
                .arg(op.output ? number(op.output->absmax) : QString())
                .arg(bits(op.headroom.float16Bits), bits(op.headroom.bfloat16Bits), QString::fromStdString(float16MaxText()));
        if (index.column() == DynamicRange && op.headroom.dynamicRangeBits)
            return tr("log2(max |x| / smallest nonzero |x|) = %1 bits (smallest nonzero |x| %2)")
                .arg(bits(op.headroom.dynamicRangeBits), number(op.output ? op.output->nonzeroAbsmin : std::nullopt));
        if (index.column() == SoftmaxEntropy && op.softmax)
            return tr("mean entropy of the output rows, in nats; a uniform row has %1").arg(number(op.softmax->uniformEntropy));
        return culprit ? tr("First op whose output is non-finite while its inputs are finite") : QVariant();
    case Qt::DisplayRole:
        switch (Column(index.column())) {
        case Index: return op.index;
        case Op: return QString::fromStdString(op.op);
        case Module: return op.module.empty() ? tr("(root)") : QString::fromStdString(op.module);
        case Source: return shortSource(QString::fromStdString(op.source));
        case Min: return number(op.output ? op.output->min : std::nullopt);
        case Max: return number(op.output ? op.output->max : std::nullopt);
        case NaN: return qint64(op.output ? op.output->nan : 0);
        case Inf: return qint64(op.output ? op.output->inf() : 0);
        case GradAbs:
            if (!op.grad)
                return QString();
            return hasNonfinite(op.grad) ? tr("non-finite") : number(op.grad->absmax);
        case Float16Headroom: return bits(op.headroom.float16Bits);
        case DynamicRange: return bits(op.headroom.dynamicRangeBits);
        case SoftmaxInputAbsmax: return op.softmax ? number(op.softmax->inputAbsmax) : QString();
        case SoftmaxEntropy: return op.softmax ? number(op.softmax->entropy) : QString();
        case Code: return QString::fromStdString(op.code);
        case ColumnCount: break;
        }
        return {};
    default:
        return {};
    }
}

QVariant ReplayOpModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    // Two lines where a title is long, so that the numbers' columns stay as narrow as the numbers.
    static const char* titles[] = {"#",          "op",         "module",        "source",        "code",
                                   "output\nmin", "output\nmax", "NaN",          "Inf",           "|grad|\nmax",
                                   "fp16\nheadroom", "range\n(bits)", "softmax\nmax|in|", "softmax\nentropy"};
    static_assert(sizeof titles / sizeof *titles == ColumnCount, "one title per column");
    if (role == Qt::DisplayRole)
        return tr(titles[section]);
    if (role == Qt::ToolTipRole) {
        switch (Column(section)) {
        case Float16Headroom: return tr("Bits between the output's largest |value| and float16's largest value (%2); "
                                        "red when an op comes within %1 bits")
                                         .arg(kNearFloat16Bits)
                                         .arg(QString::fromStdString(float16MaxText()));
        case DynamicRange: return tr("log2 of the output's largest over its smallest nonzero |value|, in bits");
        case Code: return tr("The line of source code the op came from");
        default: return {};
        }
    }
    return {};
}

bool ReplayOpModel::isFlagged(int row, Column column) const
{
    const ReplayOp& op = m_ops[size_t(row)];
    switch (column) {
    case Float16Headroom: return lowFloat16Headroom(op.headroom);
    case SoftmaxInputAbsmax:
    case SoftmaxEntropy: // the op list carries no inputs; a softmax's output has its input's shape
        return op.softmax && op.output && attentionLogitsGrown(*op.softmax, op.output->shape.size());
    default: return false;
    }
}

} // namespace nanscope
