#pragma once

#include "RunSnapshot.h"

#include "core/scan/Incident.h"
#include "core/scan/LayerHealth.h"
#include "core/scan/ScanConfig.h"

#include <QObject>
#include <QString>

#include <vector>

namespace nanscope {

// The run the window shows and what is selected in it, in one place. Views do not call each
// other, and the window does not call them for the run: each follows these signals itself
// (`follow(const RunContext*)`, as RenderDoc's viewers register with its capture context).
// runClosed() comes before every new run and after a failed open, and every view drops all it
// shows on it, so nothing of one run is ever shown beside another.
class RunContext : public QObject
{
    Q_OBJECT
public:
    explicit RunContext(QObject* parent = nullptr);

    bool hasRun() const { return m_open; }
    const RunSnapshot& snapshot() const { return m_snapshot; }
    const ScanReport& scan() const { return m_scan; }
    // The scan of this run has arrived (it follows the run by a moment).
    bool scanned() const { return m_scanned; }
    // Per snapshot().layers, from the scan (all Ok until it is in).
    const std::vector<LayerHealth>& layerHealth() const { return m_layerHealth; }
    qint64 selectedStep() const { return m_selectedStep; }
    const QString& selectedLayer() const { return m_selectedLayer; }
    // The run's first and last logged steps; 0..0 without a run.
    int64_t firstStep() const;
    int64_t lastStep() const;
    // The settings the run is judged with (the scan, the BatchNorm view's collapse markers): the
    // defaults, or the file the user named (`nanscope RUN --config FILE`).
    const ScanConfig& scanConfig() const { return m_scanConfig; }
    void setScanConfig(const ScanConfig& config) { m_scanConfig = config; }
    // Where every run opens (--step, --layer): -1 and "" for none. The window selects them once
    // the views have the run; views that choose a file near a step start there.
    qint64 startStep() const { return m_startStep; }
    const QString& startLayer() const { return m_startLayer; }
    void setStartSelection(qint64 step, const QString& layer);

    // A newly opened run: closes the current one first. A snapshot with an error closes and stays closed.
    void setRun(const RunSnapshot& snapshot);
    // The same run, grown (live follow): selection and scan stay.
    void updateRun(const RunSnapshot& snapshot);
    void setScan(const ScanReport& scan);
    void close();

    void selectStep(qint64 step);
    void selectLayer(const QString& layer);

signals:
    void runClosed();
    void runLoaded(const nanscope::RunSnapshot& snapshot);
    void runGrew(const nanscope::RunSnapshot& snapshot);
    void scanChanged(const nanscope::ScanReport& scan);
    void stepSelected(qint64 step);
    void layerSelected(const QString& layer);

private:
    bool m_open = false;
    RunSnapshot m_snapshot;
    ScanReport m_scan;
    bool m_scanned = false;
    std::vector<LayerHealth> m_layerHealth;
    qint64 m_selectedStep = -1;
    QString m_selectedLayer;
    ScanConfig m_scanConfig;
    qint64 m_startStep = -1;
    QString m_startLayer;
};

} // namespace nanscope
