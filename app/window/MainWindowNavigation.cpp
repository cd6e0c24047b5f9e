// MainWindow: selecting a step, a layer or an incident, and the views that follow the selection.
#include "app/window/MainWindow.h"

#include "app/window/RankControls.h"
#include "app/window/ScreenshotController.h"

#include "core/run/LayerNames.h"
#include "core/run/MeasuredCell.h"
#include "core/run/RunFormat.h"
#include "core/scan/IncidentCheckpoint.h"
#include "core/scan/LayerHealth.h"

#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/HeatmapView.h"
#include "widgets/IncidentModel.h"
#include "widgets/LayerDetailView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OverviewView.h"
#include "widgets/ReplayView.h"

#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>

#include <utility>

namespace nanscope {

namespace {
using Work = ScreenshotController::Work;
} // namespace

void MainWindow::showLayer(const QString& layer)
{
    m_screenshot->expect(Work::Layer);
    const QModelIndex index = m_layerFilter->mapFromSource(m_layerModel->indexOfParameter(layer));
    if (index.isValid() && m_layerTree->currentIndex() != index)
        m_layerTree->setCurrentIndex(index);
    emit layerDetailRequested(layer);
}

void MainWindow::selectStep(qint64 step)
{
    m_context->selectStep(step);
}

void MainWindow::selectLayer(const QString& layer)
{
    m_context->selectLayer(layer);
}

void MainWindow::showIncident(int row)
{
    const Incident* incident = m_incidentModel->incidentAt(row);
    if (!incident)
        return;
    // An incident of another rank is shown on that rank's run: the views start over on it, so
    // the incident is chosen again once that run and the scan have arrived (showScan).
    if (incident->rank && *incident->rank != m_rankControls->shownRank()) {
        m_incidentAfterRankSwitch = *incident;
        statusBar()->showMessage(tr("Showing rank %1 for this incident\u2026").arg(*incident->rank), 10000);
        m_rankControls->showRank(*incident->rank);
        return;
    }
    const StepRange range = incidentViewRange(*incident, m_context->firstStep(), m_context->lastStep());
    m_overview->showStepRange(range.first, range.last);
    m_layerDetail->showStepRange(range.first, range.last); // and the layers shown for it, as they arrive
    selectStep(incident->onsetStep);
    // The checkpoint that shows it: for damage an onset step wrote into the state, the first one
    // saved after it (checkpoint N is the state before step N).
    if (const auto checkpoint = checkpointShowingIncident(*incident, m_context->snapshot().checkpointSteps()))
        m_checkpoints->showCheckpoint(checkpoint->step, QString::fromStdString(checkpoint->why));
    followPrecursorOf(*incident);
    for (const auto& layer : incident->layers) {
        const QString parameter = parameterForLayer(QString::fromStdString(layer));
        if (!parameter.isEmpty()) {
            selectLayer(parameter);
            break;
        }
    }
    statusBar()->showMessage(QString::fromStdString(incident->cause), 10000);
}

void MainWindow::followPrecursorOf(const Incident& incident)
{
    // A blow-up that began in a quantity inside the model: its series is drawn under the loss
    // when the detail of its layer (the incident's first, which gets selected) arrives.
    const QString series = QString::fromStdString(incident.evidence.series);
    const bool precursor = incident.kind == IncidentKind::Blowup &&
                           (series.startsWith(QLatin1String("activations/")) ||
                            series.startsWith(QLatin1String("layers/param_norm/")));
    m_precursorSeries = precursor ? series : QString();
    if (!precursor)
        m_overview->showPrecursor(QString(), QString(), {}, {});
}

void MainWindow::showPrecursorFrom(const LayerDetail& detail)
{
    if (m_precursorSeries.isEmpty())
        return;
    const QString activations = QStringLiteral("activations/");
    const QString weights = QStringLiteral("layers/param_norm/");
    if (m_precursorSeries.startsWith(activations) && m_precursorSeries.mid(activations.size()) == detail.module) {
        // Its largest |x|, as the scan measured it: a log-variance head that falls below zero grows.
        std::vector<double> magnitudes(std::min(detail.activationMin.size(), detail.activationMax.size()));
        for (size_t r = 0; r < magnitudes.size(); ++r)
            magnitudes[r] = largestMagnitude(detail.activationMin[r], detail.activationMax[r]);
        m_overview->showPrecursor(tr("output of %1 (largest |x|)").arg(detail.module), m_precursorSeries,
                                  detail.activationSteps, magnitudes);
        return;
    }
    if (m_precursorSeries.startsWith(weights) && m_precursorSeries.mid(weights.size()) == detail.layer)
        m_overview->showPrecursor(tr("norm of %1").arg(detail.layer), m_precursorSeries, detail.steps,
                                  detail.paramNorm);
}

void MainWindow::chooseIncidentAfterRankSwitch()
{
    if (!m_incidentAfterRankSwitch)
        return;
    const Incident wanted = *std::exchange(m_incidentAfterRankSwitch, std::nullopt);
    if (wanted.rank != std::optional<int>(m_rankControls->shownRank()))
        return; // the switch failed, or the user went elsewhere meanwhile
    for (int row = 0; row < m_incidentModel->rowCount(); ++row) {
        const Incident* incident = m_incidentModel->incidentAt(row);
        if (incident && incident->rank == wanted.rank && incident->onsetStep == wanted.onsetStep
            && incident->kind == wanted.kind) {
            m_incidentTable->setCurrentIndex(m_incidentModel->index(row, 0)); // shows it
            return;
        }
    }
}

void MainWindow::setInitialSelection(qint64 step, const QString& layer)
{
    m_context->setStartSelection(step, layer);
}

void MainWindow::setScanSettings(const ScanConfig& config, const QString& file)
{
    m_context->setScanConfig(config);
    m_scanSettingsFile = file;
    // Queued to the session's thread, where it runs before any open asked for after this call.
    QMetaObject::invokeMethod(m_session, [session = m_session, config] { session->setScanConfig(config); });
}

void MainWindow::showView(View view)
{
    m_tabs->setCurrentIndex(int(view));
}

void MainWindow::selectFirstBadLayer()
{
    if (!m_context->selectedLayer().isEmpty())
        return;
    // Start where the trouble is: the first layer of the worst incident, else the first bad
    // layer, else the first one.
    if (m_incidentModel->rowCount() > 0)
        followPrecursorOf(*m_incidentModel->incidentAt(0)); // the worst incident's, as its layer is selected
    if (m_incidentModel->rowCount() > 0)
        for (const auto& layer : m_incidentModel->incidentAt(0)->layers)
            if (const QString p = parameterForLayer(QString::fromStdString(layer)); !p.isEmpty()) {
                selectLayer(p);
                return;
            }
    QString layer;
    for (size_t i = 0; i < snapshot().layers.size() && layer.isEmpty(); ++i)
        if (i < m_context->layerHealth().size() && m_context->layerHealth()[i] == LayerHealth::Bad)
            layer = QString::fromStdString(snapshot().layers[i]);
    if (layer.isEmpty() && !snapshot().layers.empty())
        layer = QString::fromStdString(snapshot().layers.front());
    if (!layer.isEmpty())
        selectLayer(layer);
}

QString MainWindow::parameterForLayer(const QString& layer) const
{
    // Scan names parameters ("fc1.weight") or modules ("fc1"): map a module to its first parameter.
    const std::string wanted = layer.toStdString();
    for (const auto& name : snapshot().layers)
        if (layernames::isWithin(name, wanted))
            return QString::fromStdString(name);
    return QString();
}

void MainWindow::showLayerTree()
{
    const QString current = m_context->selectedLayer();
    // Modules logged in /activations join the tree, so that one without parameters (where a NaN
    // is often born: a normalisation, a custom division) can be chosen and replayed.
    std::vector<std::string> modules;
    if (const TableInfo* activations = snapshot().info.table(runformat::kActivations))
        modules = activations->names;
    m_layerModel->setLayers(snapshot().layers, m_context->layerHealth(), modules,
                            judgeLayerHealth(modules, m_context->scan()));
    m_layerTree->expandAll();
    if (!current.isEmpty())
        m_layerTree->setCurrentIndex(m_layerFilter->mapFromSource(m_layerModel->indexOfParameter(current)));
}

} // namespace nanscope
