#pragma once

#include "core/scan/Incident.h"

#include <QAbstractTableModel>

namespace nanscope {

class RunContext;

// What `scan` found, one row per incident, most severe first.
class IncidentModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    // Rank: where a multi-rank run's incident was found (empty for a single process; the window
    // hides the column then).
    enum Column { Severity, Kind, Pattern, Onset, Rank, Nonfinite, Layers, Cause, ColumnCount };
    enum Role { OnsetStepRole = Qt::UserRole + 1, EndStepRole, FirstLayerRole, IncidentIndexRole, RankRole };

    explicit IncidentModel(QObject* parent = nullptr);

    // Lists the scan of the run `context` holds, and nothing once it is closed.
    void follow(const RunContext* context);
    void setReport(const ScanReport& report);
    const ScanReport& report() const { return m_report; }
    const Incident* incidentAt(int row) const;
    // Whether any incident names a rank (a multi-rank run's scan).
    bool hasRanks() const { return m_report.namesRanks(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    ScanReport m_report;
};

} // namespace nanscope
