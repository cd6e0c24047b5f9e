#pragma once

#include "core/scan/Incident.h"

#include <QAbstractTableModel>

namespace nanscope {

// What `scan` found, one row per incident, most severe first.
class IncidentModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { Severity, Kind, Pattern, Onset, Nonfinite, Layers, Cause, ColumnCount };
    enum Role { OnsetStepRole = Qt::UserRole + 1, EndStepRole, FirstLayerRole, IncidentIndexRole };

    explicit IncidentModel(QObject* parent = nullptr);

    void setReport(const ScanReport& report);
    const ScanReport& report() const { return m_report; }
    const Incident* incidentAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    ScanReport m_report;
};

} // namespace nanscope
