#pragma once

#include "ViewData.h"

#include <QAbstractTableModel>

namespace nanscope {

// The replay's ops in execution order. The first non-finite op is highlighted; non-finite
// counts are red.
class ReplayOpModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Index, Op, Module, Source, Min, Max, NaN, Inf, GradAbs, Code, ColumnCount };
    enum Role { OpIndexRole = Qt::UserRole + 1, IsCulpritRole, ModuleRole };

    explicit ReplayOpModel(QObject* parent = nullptr);

    void setReport(const ReplayReport& report);
    int rowOfOp(int opIndex) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<ReplayOp> m_ops;
    int m_culprit = -1;
};

} // namespace nanscope
