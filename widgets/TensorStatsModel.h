#pragma once

#include "ViewData.h"

#include <QAbstractTableModel>

namespace nanscope {

// Tensor statistics of one checkpoint, sortable: Qt::UserRole holds each cell's raw number.
// Non-finite counts are red; BatchNorm buffers are marked, since parameter checks miss them.
class TensorStatsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Name, Shape, DType, Min, Max, Mean, Std, Norm, NaN, Inf, Update, Flags, ColumnCount };
    enum Role { SortRole = Qt::UserRole, RowRole };

    explicit TensorStatsModel(QObject* parent = nullptr);
    void setTensors(const std::vector<CheckpointTensor>& tensors);
    const std::vector<CheckpointTensor>& tensors() const { return m_tensors; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<CheckpointTensor> m_tensors;
};

} // namespace nanscope
