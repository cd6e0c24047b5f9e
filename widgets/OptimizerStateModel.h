#pragma once

#include "ViewData.h"

#include <QAbstractTableModel>

namespace nanscope {

// A checkpoint's optimizer state, one row per parameter, sortable (SortRole holds each cell's raw
// number): Adam's last update against lr, the share of elements where eps dominates, the moments
// and their NaN/Inf, and the flags `nanscope stats` judged. Flagged rows are red.
class OptimizerStateModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Name,
        Shape,
        Group,
        Step,
        UpdateRms,
        UpdateToLr,
        EpsilonDominated,
        ExpAvgRms,
        ExpAvgSqRootRms,
        Nonfinite,
        Flags,
        ColumnCount
    };
    enum Role { SortRole = Qt::UserRole };

    explicit OptimizerStateModel(QObject* parent = nullptr);
    void setOptimizer(const CheckpointOptimizer& optimizer);
    const CheckpointOptimizer& optimizer() const { return m_optimizer; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    CheckpointOptimizer m_optimizer;
};

} // namespace nanscope
