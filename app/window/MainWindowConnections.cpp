// How MainWindow's parts talk to each other: the session's signals to the views, the views to the
// shared RunContext (layer, step, rank), and what the views ask of the window (replay, reload,
// compare). The window's parts are built in MainWindow.cpp.
#include "app/window/MainWindow.h"

#include "app/window/CheckpointLoader.h"
#include "app/window/ComparedRuns.h"
#include "app/window/RankControls.h"
#include "app/children/ReplayProcess.h"
#include "app/window/ScreenshotController.h"
#include "app/window/WindowDocks.h"
#include "app/codecs/TriageJson.h"

#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/HeatmapView.h"
#include "widgets/IncidentModel.h"
#include "widgets/LayerDetailView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OverviewView.h"
#include "widgets/ReplayView.h"

#include <QItemSelectionModel>
#include <QThread>
#include <QLabel>
#include <QProgressBar>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QTreeView>

namespace nanscope {

namespace {
using Work = ScreenshotController::Work;
} // namespace

void MainWindow::connectSession()
{
    // The session lives on its own thread; everything crosses by queued connection.
    m_session->moveToThread(m_sessionThread);
    connect(m_sessionThread, &QThread::finished, m_session, &QObject::deleteLater);
    connect(this, &MainWindow::openRequested, m_session, &RunSession::open);
    connect(this, &MainWindow::layerDetailRequested, m_session, &RunSession::requestLayerDetail);
    connect(this, &MainWindow::heatmapRequested, m_session, &RunSession::requestHeatmap);
    connect(m_session, &RunSession::loaded, this, &MainWindow::onLoaded);
    connect(m_session, &RunSession::grew, this, [this](const RunSnapshot& snapshot) {
        m_grewSinceOpen = true;
        m_context->updateRun(snapshot);
    });
    connect(m_session, &RunSession::followingEnded, this, [this] {
        m_grewSinceOpen = false;
        updateStatus();
    });
    connect(m_session, &RunSession::progress, this, &MainWindow::onProgress);
    connect(m_session, &RunSession::scanned, m_context, &RunContext::setScan);
    connect(m_session, &RunSession::heatmapReady, this, [this](const LayerHeatmap& heatmap) {
        if (!m_context->hasRun())
            return; // the run it belongs to was closed
        m_heatmap->setHeatmap(heatmap);
        m_screenshot->arrived(Work::Heatmap);
    });
    connect(m_session, &RunSession::scanFailed, this, [this](const QString& error) {
        if (!m_context->hasRun())
            return;
        m_scanError = error;
        updateStatus();
        statusBar()->showMessage(tr("Scan failed: %1").arg(error), 30000);
        m_screenshot->arrived(Work::Scan);
    });
    connect(m_session, &RunSession::heatmapFailed, this, [this](const QString& error) {
        if (!m_context->hasRun())
            return;
        statusBar()->showMessage(tr("Heatmap failed: %1").arg(error), 30000);
        m_screenshot->arrived(Work::Heatmap);
    });
    connect(m_session, &RunSession::layerDetailReady, this, [this](const LayerDetail& detail) {
        if (!m_context->hasRun() || detail.layer != m_context->selectedLayer())
            return; // a later click, or another run, already replaced this request
        m_layerDetail->setDetail(detail);
        showPrecursorFrom(detail);
        if (m_context->selectedStep() >= 0)
            m_layerDetail->setSelectedStep(m_context->selectedStep());
        emit layerShown(detail.layer);
        m_screenshot->arrived(Work::Layer);
    });
    m_rankControls = new RankControls(this, m_session, m_context); // the rank selector and heatmap of a multi-rank run
    m_sessionThread->start();
}

void MainWindow::connectViewsToContext()
{
    // The window's frame first: the views then lay the run out in a page that is shown.
    connect(m_context, &RunContext::runClosed, this, &MainWindow::clearViews);
    connect(m_context, &RunContext::runLoaded, this, &MainWindow::showRunFrame);
    // The views follow the run themselves, before the window's handlers below (these read what
    // the views were given: the incident list's rows).
    m_overview->follow(m_context);
    m_layerDetail->follow(m_context);
    m_heatmap->follow(m_context);
    m_batchNorm->follow(m_context);
    m_checkpoints->follow(m_context);
    m_replay->follow(m_context);
    m_incidentModel->follow(m_context);
    connect(m_context, &RunContext::runLoaded, this, &MainWindow::showRun);
    connect(m_context, &RunContext::runGrew, this, [this](const RunSnapshot& snapshot) {
        // Live follow: keep the user's selection and zoom; the data, the saved checkpoints and
        // batches move on.
        showSnapshot(snapshot);
        if (!m_context->selectedLayer().isEmpty())
            emit layerDetailRequested(m_context->selectedLayer());
    });
    connect(m_context, &RunContext::scanChanged, this, &MainWindow::showScan);
    connect(m_context, &RunContext::layerSelected, this, &MainWindow::showLayer);
}

void MainWindow::connectViewRequests()
{
    connect(m_overview, &OverviewView::stepClicked, this, &MainWindow::selectStep);
    connect(m_overview, &OverviewView::zoomReset, m_layerDetail, &LayerDetailView::resetZoom);
    connect(m_layerDetail, &LayerDetailView::stepClicked, this, &MainWindow::selectStep);
    connect(m_heatmap, &HeatmapView::stepClicked, this, &MainWindow::selectStep);
    connect(m_batchNorm, &BatchNormView::stepClicked, this, &MainWindow::selectStep);
    connect(m_heatmap, &HeatmapView::layerClicked, this, &MainWindow::selectLayer);
    connect(m_heatmap, &HeatmapView::quantityRequested, this, [this](int quantity) {
        if (m_context->hasRun())
            emit heatmapRequested(quantity);
    });
    connect(m_incidentTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { showIncident(current.row()); });
    connect(m_checkpoints, &CheckpointsView::checkpointRequested, this, [this](qint64 step) {
        m_screenshot->expect(Work::Checkpoint);
        m_checkpointLoader->load(step, snapshot().info.checkpoints);
    });
    connect(m_checkpointLoader, &CheckpointLoader::optimizerLoaded, this,
            [this](qint64 step, const CheckpointOptimizer& optimizer, const QString& error) {
                if (m_context->hasRun())
                    m_checkpoints->setOptimizer(step, optimizer, error);
            });
    connect(m_checkpointLoader, &CheckpointLoader::loaded, this,
            [this](qint64 step, const std::vector<CheckpointTensor>& tensors, const QString& error) {
                if (!m_context->hasRun())
                    return;
                m_checkpoints->setTensors(step, tensors, error);
                emit checkpointShown(step);
                m_screenshot->arrived(Work::Checkpoint);
            });
    connect(m_replay, &ReplayView::replayRequested, this, &MainWindow::runReplay);
    // The triage runs the user's model several times: in a child, as the replay does.
    connect(m_replay, &ReplayView::triageRequested, this, [this](qint64 step) {
        if (!m_context->hasRun() || step < 0)
            return;
        m_replay->setRunning(true);
        statusBar()->showMessage(tr("Triaging step %1 in a child process…").arg(step));
        // Its JSON holds up to seven replays: parsed off the GUI thread.
        auto decoded = std::make_shared<TriageReport>();
        QStringList arguments{"triage", snapshot().directory, "--step", QString::number(step), "--json"};
        if (m_rankControls->shownRank() >= 0) // a multi-rank run: the rank shown
            arguments << "--rank" << QString::number(m_rankControls->shownRank());
        m_triageChild->start(arguments,
                             [this, step, decoded](const ChildOutcome&) {
                                 const TriageReport& triage = *decoded;
                                 m_replay->setRunning(false);
                                 // The ops shown are the step the triage judged, unfiltered: not a
                                 // replay made before it (of one module, or of another step).
                                 if (triage.incidentReplay)
                                     m_replay->showTriagedReplay(*triage.incidentReplay);
                                 m_replay->setTriage(triage);
                                 statusBar()->showMessage(triage.error.isEmpty() ? tr("Triaged step %1").arg(step)
                                                                                 : tr("Triage of step %1 failed").arg(step),
                                                          5000);
                                 emit triageFinished(triage.error.isEmpty());
                             },
                             [decoded, step](const ChildOutcome& outcome) { *decoded = triageReportFrom(outcome, step); });
    });
    connect(m_replay, &ReplayView::cancelRequested, this, [this] {
        m_replayProcess->cancel();
        m_triageChild->cancel();
        m_replay->setRunning(false);
    });
    connect(m_replay, &ReplayView::moduleClicked, m_replay, &ReplayView::replayModule);
    connect(m_replayProcess, &ReplayProcess::finished, this, [this](const ReplayReport& report) {
        m_replay->setRunning(false);
        m_replay->setReport(report);
        statusBar()->showMessage(report.error.isEmpty() ? tr("Replayed step %1").arg(report.result.step)
                                                        : tr("Replay of step %1 failed").arg(report.result.step),
                                 5000);
        emit replayFinished(report.error.isEmpty());
        m_screenshot->arrived(Work::Replay);
    });
    // Double-clicking a layer replays its module at the selected step.
    connect(m_layerTree, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
        showView(View::Replay);
        m_replay->replayModule(index.data(LayerTreeModel::ModulePathRole).toString());
    });
    connect(m_layerTree->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& index) {
        // A module row stands for its parameters: it shows its first one, never the parameter of
        // another module that was selected before.
        QString name = index.data(LayerTreeModel::ParameterNameRole).toString();
        const QString module = index.data(LayerTreeModel::ModulePathRole).toString();
        if (name.isEmpty() && !module.isEmpty())
            name = parameterForLayer(module);
        if (!name.isEmpty())
            selectLayer(name);
    });
}

} // namespace nanscope
