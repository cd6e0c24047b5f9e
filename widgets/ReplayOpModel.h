#pragma once

#include "ViewData.h"

#include <QAbstractTableModel>

namespace nanscope {

// A source location as the op table shows it: the file's last folder, its name and the line (the
// whole path is the cell's tooltip).
QString shortSource(const QString& source);

// The replay's ops in execution order. The first non-finite op is highlighted; non-finite
// counts are red. Each op's precision headroom (bits to float16's largest value; red under
// kNearFloat16Bits) and dynamic range, and for softmax calls the max |input| and the
// entropy of the output (red when the attention logits have grown).
class ReplayOpModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    // The line of code beside its source location, before the numbers: a window of 1280 pixels
    // showed it last, cut off at the right edge ("return ...").
    enum Column {
        Index, Op, Module, Source, Code, Min, Max, NaN, Inf, GradAbs,
        Float16Headroom, DynamicRange, SoftmaxInputAbsmax, SoftmaxEntropy,
        ColumnCount
    };
    enum Role { OpIndexRole = Qt::UserRole + 1, IsCulpritRole, ModuleRole, IsFlaggedRole };

    explicit ReplayOpModel(QObject* parent = nullptr);

    void setReport(const ReplayReport& report);
    int rowOfOp(int opIndex) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    // Red by the replay's own thresholds (core/replay/ReplaySignatures).
    bool isFlagged(int row, Column column) const;

    std::vector<ReplayOp> m_ops;
    int m_culprit = -1;
};

} // namespace nanscope
