#include "RunContext.h"

namespace nanscope {

RunContext::RunContext(QObject* parent)
    : QObject(parent)
{
}

int64_t RunContext::firstStep() const
{
    return m_snapshot.steps.empty() ? 0 : m_snapshot.steps.front();
}

int64_t RunContext::lastStep() const
{
    return m_snapshot.steps.empty() ? 0 : m_snapshot.steps.back();
}

void RunContext::setStartSelection(qint64 step, const QString& layer)
{
    m_startStep = step;
    m_startLayer = layer;
}

void RunContext::close()
{
    const bool wasOpen = m_open;
    m_open = false;
    m_snapshot = RunSnapshot();
    m_scan = ScanReport();
    m_scanned = false;
    m_layerHealth.clear();
    m_selectedStep = -1;
    m_selectedLayer.clear();
    if (wasOpen)
        emit runClosed();
}

void RunContext::setRun(const RunSnapshot& snapshot)
{
    // Always a close first, even from "no run": a failed open that follows a good run must not
    // leave the good run's views up beside its error.
    m_open = true;
    close();
    if (!snapshot.error.isEmpty()) {
        m_snapshot.directory = snapshot.directory;
        m_snapshot.error = snapshot.error;
        return;
    }
    m_open = true;
    m_snapshot = snapshot;
    m_layerHealth.assign(snapshot.layers.size(), LayerHealth::Ok);
    emit runLoaded(m_snapshot);
}

void RunContext::updateRun(const RunSnapshot& snapshot)
{
    if (!m_open || !snapshot.error.isEmpty())
        return;
    m_snapshot = snapshot;
    if (m_layerHealth.size() != snapshot.layers.size())
        m_layerHealth = judgeLayerHealth(snapshot.layers, m_scan);
    emit runGrew(m_snapshot);
}

void RunContext::setScan(const ScanReport& scan)
{
    if (!m_open)
        return;
    m_scan = scan;
    m_scanned = true;
    m_layerHealth = judgeLayerHealth(m_snapshot.layers, scan);
    emit scanChanged(m_scan);
}

void RunContext::selectStep(qint64 step)
{
    if (!m_open || step == m_selectedStep)
        return;
    m_selectedStep = step;
    emit stepSelected(step);
}

void RunContext::selectLayer(const QString& layer)
{
    if (!m_open || layer == m_selectedLayer)
        return;
    m_selectedLayer = layer;
    emit layerSelected(layer);
}

} // namespace nanscope
