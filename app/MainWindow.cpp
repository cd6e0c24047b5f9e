#include "MainWindow.h"

#include "ChildProgram.h"

#include "core/run/LayerNames.h"

#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "CheckpointLoader.h"
#include "widgets/HeatmapView.h"
#include "widgets/IncidentModel.h"
#include "widgets/LayerDetailView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OverviewView.h"
#include "widgets/ReplayView.h"
#include "ReplayProcess.h"
#include "widgets/SeriesPlot.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

// Resources compiled into a static library must be registered by hand; outside any namespace.
static void initResources()
{
    Q_INIT_RESOURCE(nanscope);
}

namespace nanscope {

namespace {
constexpr int kMaxRecentRuns = 8;
}

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_sessionThread(new QThread(this))
    , m_session(new RunSession())
    , m_pages(new QStackedWidget(this))
    , m_placeholder(new QLabel(this))
    , m_errorLabel(new QLabel(this))
    , m_tabs(new QTabWidget(this))
    , m_overview(new OverviewView(this))
    , m_layerDetail(new LayerDetailView(this))
    , m_heatmap(new HeatmapView(this))
    , m_batchNorm(new BatchNormView(this))
    , m_replay(new ReplayView(this))
    , m_checkpoints(new CheckpointsView(this))
    , m_checkpointLoader(new CheckpointLoader(this))
    , m_replayProcess(new ReplayProcess(this))
    , m_exportChild(new ChildProgram(this))
    , m_layerModel(new LayerTreeModel(this))
    , m_layerFilter(new QSortFilterProxyModel(this))
    , m_incidentModel(new IncidentModel(this))
{
    initResources();
    setWindowTitle("nanscope");
    setWindowIcon(QIcon(":/nanscope/nanscope.svg"));
    setObjectName("MainWindow");
    setAcceptDrops(true);
    resize(1400, 900);

    m_placeholder->setText(tr("<h2>nanscope</h2><p>Open a run directory with <b>File \u25B8 Open Run\u2026</b> "
                              "(Ctrl+O), or drop its folder here.</p>"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setAlignment(Qt::AlignCenter);
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setStyleSheet("QLabel { color: #b00020; font-size: 14px; padding: 24px; }");

    m_tabs->addTab(m_overview, tr("Overview"));
    m_tabs->addTab(m_layerDetail, tr("Layer"));
    m_tabs->addTab(m_heatmap, tr("Heatmap"));
    m_tabs->addTab(m_batchNorm, tr("BatchNorm"));
    m_tabs->addTab(m_checkpoints, tr("Checkpoints"));
    m_tabs->addTab(m_replay, tr("Replay"));
    m_pages->addWidget(m_placeholder);
    m_pages->addWidget(m_errorLabel);
    m_pages->addWidget(m_tabs);
    setCentralWidget(m_pages);

    // The layer tree, with its filter box, docked on the left.
    auto* layerPanel = new QWidget(this);
    auto* layerLayout = new QVBoxLayout(layerPanel);
    layerLayout->setContentsMargins(4, 4, 4, 4);
    m_filterEdit = new QLineEdit(layerPanel);
    m_filterEdit->setPlaceholderText(tr("Filter layers (Ctrl+F)"));
    m_filterEdit->setClearButtonEnabled(true);
    m_layerFilter->setSourceModel(m_layerModel);
    m_layerFilter->setRecursiveFilteringEnabled(true);
    m_layerFilter->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_layerFilter->setFilterRole(LayerTreeModel::ParameterNameRole);
    m_layerTree = new QTreeView(layerPanel);
    m_layerTree->setModel(m_layerFilter);
    m_layerTree->setHeaderHidden(true);
    m_layerTree->setUniformRowHeights(true);
    layerLayout->addWidget(m_filterEdit);
    layerLayout->addWidget(m_layerTree);
    auto* layerDock = new QDockWidget(tr("Layers"), this);
    layerDock->setObjectName("LayersDock");
    layerDock->setWidget(layerPanel);
    addDockWidget(Qt::LeftDockWidgetArea, layerDock);
    resizeDocks({layerDock}, {260}, Qt::Horizontal);

    // What scan found, docked under the views.
    m_incidentTable = new QTableView(this);
    m_incidentTable->setModel(m_incidentModel);
    m_incidentTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_incidentTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_incidentTable->verticalHeader()->hide();
    m_incidentTable->horizontalHeader()->setStretchLastSection(true);
    m_incidentTable->setWordWrap(false);
    auto* incidentDock = new QDockWidget(tr("Incidents"), this);
    incidentDock->setObjectName("IncidentsDock");
    incidentDock->setWidget(m_incidentTable);
    addDockWidget(Qt::BottomDockWidgetArea, incidentDock);
    resizeDocks({incidentDock}, {170}, Qt::Vertical);

    m_progress = new QProgressBar(this);
    m_progress->setMaximumWidth(220);
    m_progress->setVisible(false);
    m_cancel = new QToolButton(this);
    m_cancel->setText(tr("Cancel"));
    m_cancel->setVisible(false);
    m_statusRun = new QLabel(tr("No run loaded"), this);
    statusBar()->addWidget(m_statusRun, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);

    buildMenus();

    // The session lives on its own thread; everything crosses by queued connection.
    m_session->moveToThread(m_sessionThread);
    connect(m_sessionThread, &QThread::finished, m_session, &QObject::deleteLater);
    connect(this, &MainWindow::openRequested, m_session, &RunSession::open);
    connect(this, &MainWindow::layerDetailRequested, m_session, &RunSession::requestLayerDetail);
    connect(this, &MainWindow::heatmapRequested, m_session, &RunSession::requestHeatmap);
    connect(m_session, &RunSession::loaded, this, &MainWindow::onLoaded);
    connect(m_session, &RunSession::grew, this, &MainWindow::onGrew);
    connect(m_session, &RunSession::progress, this, &MainWindow::onProgress);
    connect(m_session, &RunSession::heatmapReady, this, &MainWindow::onHeatmap);
    connect(m_session, &RunSession::scanned, this, &MainWindow::onScanned);
    connect(m_incidentTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { showIncident(current.row()); });
    connect(m_session, &RunSession::layerDetailReady, this, [this](const LayerDetail& detail) {
        if (detail.layer != m_selectedLayer)
            return; // a later click already replaced this request
        m_layerDetail->setDetail(detail);
        if (m_selectedStep >= 0)
            m_layerDetail->setSelectedStep(m_selectedStep);
        m_layerPending = false;
        emit layerShown(detail.layer);
        maybeTakeScreenshot();
    });
    connect(m_cancel, &QToolButton::clicked, this, [this] { m_session->cancel(); });
    m_sessionThread->start();

    // Context: one selected step and one selected layer, shared by every view.
    connect(m_overview, &OverviewView::stepClicked, this, &MainWindow::selectStep);
    connect(m_layerDetail, &LayerDetailView::stepClicked, this, &MainWindow::selectStep);
    connect(m_heatmap, &HeatmapView::stepClicked, this, &MainWindow::selectStep);
    connect(m_batchNorm, &BatchNormView::stepClicked, this, &MainWindow::selectStep);
    connect(m_heatmap, &HeatmapView::layerClicked, this, &MainWindow::selectLayer);
    connect(m_heatmap, &HeatmapView::quantityRequested, this, &MainWindow::heatmapRequested);
    connect(m_checkpoints, &CheckpointsView::checkpointRequested, this,
            [this](qint64 step) {
                m_checkpointPending = true;
                m_checkpointLoader->load(step, m_snapshot.info.checkpoints);
            });
    connect(m_checkpointLoader, &CheckpointLoader::loaded, this,
            [this](qint64 step, const std::vector<TensorRow>& tensors, const QString& error) {
                m_checkpoints->setTensors(step, tensors, error);
                m_checkpointPending = false;
                emit checkpointShown(step);
                maybeTakeScreenshot();
            });
    connect(m_replay, &ReplayView::replayRequested, this, &MainWindow::runReplay);
    connect(m_replay, &ReplayView::cancelRequested, this, [this] {
        m_replayProcess->cancel();
        m_replay->setRunning(false);
    });
    connect(m_replay, &ReplayView::moduleClicked, this, [this](const QString& module) {
        ReplayRequest request = m_replay->request();
        request.layerPrefix = module;
        m_replay->setLayerPrefix(module);
        runReplay(request);
    });
    connect(m_replayProcess, &ReplayProcess::finished, this, [this](const ReplayReport& report) {
        m_replay->setRunning(false);
        m_replay->setReport(report);
        m_replayPending = false;
        statusBar()->showMessage(report.error.isEmpty() ? tr("Replayed step %1").arg(report.step)
                                                        : tr("Replay of step %1 failed").arg(report.step),
                                 5000);
        emit replayFinished(report.error.isEmpty());
        maybeTakeScreenshot();
    });
    // Double-clicking a layer replays its module at the selected step.
    connect(m_layerTree, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
        const QString module = index.data(LayerTreeModel::ModulePathRole).toString();
        m_replay->setLayerPrefix(module);
        showView(View::Replay);
        runReplay(m_replay->request());
    });
    connect(m_filterEdit, &QLineEdit::textChanged, m_layerFilter, &QSortFilterProxyModel::setFilterFixedString);
    connect(m_layerTree->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& index) {
        const QString name = index.data(LayerTreeModel::ParameterNameRole).toString();
        if (!name.isEmpty() && name != m_selectedLayer)
            selectLayer(name);
    });

    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    updateRecentMenu();
}

MainWindow::~MainWindow()
{
    m_session->cancel();
    m_sessionThread->quit();
    m_sessionThread->wait();
}

void MainWindow::buildMenus()
{
    auto* fileMenu = menuBar()->addMenu(tr("&File"));
    fileMenu->addAction(tr("&Open Run\u2026"), QKeySequence::Open, this, &MainWindow::chooseRun);
    m_recentMenu = fileMenu->addMenu(tr("Open &Recent"));
    fileMenu->addAction(tr("&Reload"), QKeySequence::Refresh, this, [this] {
        if (!m_snapshot.directory.isEmpty())
            openRun(m_snapshot.directory);
    });
    fileMenu->addAction(tr("&Export Incident Report…"), QKeySequence(Qt::CTRL | Qt::Key_E), this, &MainWindow::exportReport);
    fileMenu->addSeparator();
    fileMenu->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    auto* viewMenu = menuBar()->addMenu(tr("&View"));
    const std::pair<QString, View> views[] = {{tr("&Overview"), View::Overview},
                                              {tr("&Layer"), View::Layers},
                                              {tr("&Heatmap"), View::Heatmap},
                                              {tr("&BatchNorm"), View::BatchNorm},
                                              {tr("&Checkpoints"), View::Checkpoints},
                                              {tr("&Replay"), View::Replay}};
    int key = Qt::Key_1;
    for (const auto& [label, view] : views) {
        const View target = view;
        viewMenu->addAction(label, QKeySequence(Qt::CTRL | Qt::Key(key++)), this, [this, target] { showView(target); });
    }
    viewMenu->addSeparator();
    viewMenu->addAction(tr("&Find Layer"), QKeySequence::Find, this, [this] {
        m_filterEdit->setFocus();
        m_filterEdit->selectAll();
    });
}

void MainWindow::exportReport()
{
    if (m_snapshot.directory.isEmpty() || !m_snapshot.error.isEmpty())
        return;
    // Never into the run directory by default: nanscope does not write where it inspects.
    const QString suggested = QDir::home().filePath(QString::fromStdString(m_snapshot.info.runName) + "-incident-report.html");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Incident Report"), suggested,
                                                      tr("HTML (*.html);;PDF (*.pdf);;Markdown (*.md);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    // In a child process: the report replays saved steps, which runs the checkpoints' code.
    m_progress->setRange(0, 0);
    m_progress->setFormat(tr("Writing report"));
    m_progress->setVisible(true);
    statusBar()->showMessage(tr("Writing %1…").arg(path));
    m_exportChild->setProgram(m_replayProgram.isEmpty() ? nanscopeProgram() : m_replayProgram);
    m_exportChild->start({"report", m_snapshot.directory, "-o", path}, [this, path](const ChildOutcome& outcome) {
        m_progress->setRange(0, 100);
        m_progress->setVisible(false);
        statusBar()->showMessage(outcome.succeeded() ? tr("Wrote %1").arg(path) : tr("Report failed: %1").arg(outcome.message),
                                 10000);
    });
}

void MainWindow::showView(View view)
{
    m_tabs->setCurrentIndex(int(view));
}

void MainWindow::chooseRun()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Run Directory"),
                                                          QSettings().value("lastOpenDir").toString());
    if (dir.isEmpty())
        return;
    QSettings().setValue("lastOpenDir", QFileInfo(dir).absolutePath());
    openRun(dir);
}

void MainWindow::openRun(const QString& directory)
{
    m_loaded = false;
    m_layerHealth.clear();
    m_statusRun->setText(tr("Loading %1\u2026").arg(directory));
    emit openRequested(directory);
}

void MainWindow::setInitialSelection(qint64 step, const QString& layer)
{
    m_initialStep = step;
    m_initialLayer = layer;
}

QString MainWindow::errorText() const
{
    return m_pages->currentWidget() == m_errorLabel ? m_errorLabel->text() : QString();
}

void MainWindow::onProgress(int percent, const QString& what)
{
    const bool busy = percent < 100 && !what.isEmpty();
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    m_progress->setValue(percent);
    m_progress->setFormat(what + "  %p%");
}

void MainWindow::onLoaded(const RunSnapshot& snapshot)
{
    m_snapshot = snapshot;
    m_loaded = true;
    if (!snapshot.error.isEmpty()) {
        m_errorLabel->setText(tr("Cannot open this run.\n\n%1").arg(snapshot.error));
        m_pages->setCurrentWidget(m_errorLabel);
        m_statusRun->setText(tr("Failed to load %1").arg(snapshot.directory));
        setWindowTitle("nanscope");
        emit runLoaded(false);
        maybeTakeScreenshot();
        return;
    }
    rememberRun(snapshot.directory);
    showSnapshot(snapshot);
    m_pages->setCurrentWidget(m_tabs);
    setWindowTitle(QString("%1 \u2014 nanscope").arg(QString::fromStdString(snapshot.info.runName)));

    m_selectedLayer.clear();
    m_heatmapPending = !snapshot.layers.empty();
    m_scanPending = true;
    const std::vector<int64_t> replayableSteps = snapshot.info.replayableSteps();
    const std::vector<qint64> replayable(replayableSteps.begin(), replayableSteps.end());
    m_replay->setReplayableSteps(replayable);
    std::vector<qint64> checkpointSteps;
    for (const auto& [step, path] : snapshot.info.checkpoints)
        checkpointSteps.push_back(step);
    m_checkpoints->setCheckpointSteps(checkpointSteps);
    m_overview->setCheckpointSteps(std::vector<int64_t>(checkpointSteps.begin(), checkpointSteps.end()));
    m_tabs->setTabEnabled(int(View::Checkpoints), !checkpointSteps.empty());
    if (!checkpointSteps.empty())
        m_checkpoints->chooseStepNear(m_initialStep >= 0 ? m_initialStep : checkpointSteps.back());
    m_tabs->setTabEnabled(int(View::Replay), !replayable.empty());
    if (!m_initialLayer.isEmpty())
        selectLayer(m_initialLayer);
    if (m_initialStep >= 0)
        selectStep(m_initialStep);
    if (m_tabs->currentIndex() == int(View::Replay) && m_initialStep >= 0 && !m_screenshotPath.isEmpty())
        runReplay(m_replay->request()); // a screenshot of the replay view shows a replay
    emit runLoaded(true);
    maybeTakeScreenshot();
}

void MainWindow::onGrew(const RunSnapshot& snapshot)
{
    // Live follow: keep the user's selection and zoom; only the data moves on.
    m_snapshot = snapshot;
    showSnapshot(snapshot);
    if (!m_selectedLayer.isEmpty())
        emit layerDetailRequested(m_selectedLayer);
}

void MainWindow::onHeatmap(const LayerHeatmap& heatmap)
{
    m_heatmap->setHeatmap(heatmap);
    m_heatmapPending = false;
    maybeTakeScreenshot();
}

void MainWindow::onScanned(const ScanReport& report)
{
    m_incidentModel->setReport(report);
    m_overview->setIncidents(report.incidents);
    m_incidentTable->resizeColumnsToContents();
    m_incidentTable->setColumnWidth(IncidentModel::Layers, std::min(m_incidentTable->columnWidth(IncidentModel::Layers), 260));
    // The tree's icons come from the incidents, so that they agree with the list beside them.
    m_layerHealth = judgeLayerHealth(m_snapshot.layers, report);
    showLayerTree();
    selectFirstBadLayer();
    m_scanPending = false;
    updateStatus();
    emit layersJudged();
    emit incidentsFound(int(report.incidents.size()));
    maybeTakeScreenshot();
}

void MainWindow::selectFirstBadLayer()
{
    if (!m_selectedLayer.isEmpty())
        return;
    // Start where the trouble is: the first layer of the worst incident, else the first bad
    // layer, else the first one.
    if (m_incidentModel->rowCount() > 0)
        for (const auto& layer : m_incidentModel->incidentAt(0)->layers)
            if (const QString p = parameterForLayer(QString::fromStdString(layer)); !p.isEmpty()) {
                selectLayer(p);
                return;
            }
    QString layer;
    for (size_t i = 0; i < m_snapshot.layers.size() && layer.isEmpty(); ++i)
        if (i < m_layerHealth.size() && m_layerHealth[i] == LayerHealth::Bad)
            layer = QString::fromStdString(m_snapshot.layers[i]);
    if (layer.isEmpty() && !m_snapshot.layers.empty())
        layer = QString::fromStdString(m_snapshot.layers.front());
    if (!layer.isEmpty())
        selectLayer(layer);
}

QString MainWindow::parameterForLayer(const QString& layer) const
{
    // Scan names parameters ("fc1.weight") or modules ("fc1"): map a module to its first parameter.
    const std::string wanted = layer.toStdString();
    for (const auto& name : m_snapshot.layers)
        if (layernames::isWithin(name, wanted))
            return QString::fromStdString(name);
    return QString();
}

void MainWindow::showIncident(int row)
{
    const Incident* incident = m_incidentModel->incidentAt(row);
    if (!incident)
        return;
    const auto& steps = m_snapshot.steps;
    const StepRange range = incidentViewRange(*incident, steps.empty() ? 0 : steps.front(), steps.empty() ? 0 : steps.back());
    m_overview->showStepRange(range.first, range.last);
    selectStep(incident->onsetStep);
    for (const auto& layer : incident->layers) {
        const QString parameter = parameterForLayer(QString::fromStdString(layer));
        if (!parameter.isEmpty()) {
            selectLayer(parameter);
            break;
        }
    }
    statusBar()->showMessage(QString::fromStdString(incident->cause), 10000);
}

void MainWindow::showLayerTree()
{
    const QString current = m_selectedLayer;
    m_layerModel->setLayers(m_snapshot.layers, m_layerHealth);
    m_layerTree->expandAll();
    if (!current.isEmpty())
        m_layerTree->setCurrentIndex(m_layerFilter->mapFromSource(m_layerModel->indexOfParameter(current)));
}

void MainWindow::showSnapshot(const RunSnapshot& snapshot)
{
    m_overview->setScalars(snapshot.steps, snapshot.scalars, snapshot.skippedSteps);
    if (m_layerHealth.size() != snapshot.layers.size())
        m_layerHealth.assign(snapshot.layers.size(), LayerHealth::Ok);
    showLayerTree();
    m_batchNorm->setSeries(snapshot.batchNorm);
    m_tabs->setTabEnabled(int(View::Heatmap), !snapshot.layers.empty());
    m_tabs->setTabEnabled(int(View::BatchNorm), !snapshot.batchNorm.empty());
    updateStatus();
}

void MainWindow::updateStatus()
{
    const RunSnapshot& snapshot = m_snapshot;
    int bad = 0;
    for (LayerHealth h : m_layerHealth)
        bad += h == LayerHealth::Bad;
    const qint64 lastStep = snapshot.steps.empty() ? -1 : snapshot.steps.back();
    m_statusRun->setText(tr("%1  \u2014  %2 steps (last %3), %4 layers (%5 in critical incidents), "
                            "%6 checkpoints, %7 batches, %9 incidents%8")
                             .arg(snapshot.directory)
                             .arg(snapshot.steps.size())
                             .arg(lastStep)
                             .arg(snapshot.layers.size())
                             .arg(bad)
                             .arg(snapshot.info.checkpoints.size())
                             .arg(snapshot.info.batches.size())
                             .arg(snapshot.info.openedForSwmr ? tr(", following live") : QString())
                             .arg(m_incidentModel->rowCount()));
}

void MainWindow::selectStep(qint64 step)
{
    m_selectedStep = step;
    m_overview->setSelectedStep(step);
    m_heatmap->setSelectedStep(step);
    m_layerDetail->setSelectedStep(step);
    m_batchNorm->setSelectedStep(step);
    m_replay->chooseStepNear(step);
    m_checkpoints->chooseStepNear(step);
}

void MainWindow::setReplayProgram(const QString& program)
{
    m_replayProgram = program;
    m_replayProcess->setProgram(program);
    m_checkpointLoader->setProgram(program);
}

void MainWindow::runReplay(const ReplayRequest& request)
{
    if (m_snapshot.directory.isEmpty() || request.step < 0)
        return;
    m_replayPending = true;
    m_replay->setRunning(true);
    statusBar()->showMessage(tr("Replaying step %1 in a child process…").arg(request.step));
    m_replayProcess->start(m_snapshot.directory, request);
}

void MainWindow::selectLayer(const QString& layer)
{
    if (layer == m_selectedLayer)
        return;
    m_selectedLayer = layer;
    m_layerPending = true;
    const QModelIndex index = m_layerFilter->mapFromSource(m_layerModel->indexOfParameter(layer));
    if (index.isValid() && m_layerTree->currentIndex() != index)
        m_layerTree->setCurrentIndex(index);
    emit layerDetailRequested(layer);
}

QStringList MainWindow::recentRuns() const
{
    return QSettings().value("recentRuns").toStringList();
}

void MainWindow::rememberRun(const QString& directory)
{
    QStringList runs = recentRuns();
    const QString path = QFileInfo(directory).absoluteFilePath();
    runs.removeAll(path);
    runs.prepend(path);
    while (runs.size() > kMaxRecentRuns)
        runs.removeLast();
    QSettings().setValue("recentRuns", runs);
    updateRecentMenu();
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList runs = recentRuns();
    for (const QString& run : runs)
        m_recentMenu->addAction(run, this, [this, run] { openRun(run); });
    m_recentMenu->setEnabled(!runs.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty())
        return;
    QFileInfo info(urls.first().toLocalFile());
    openRun(info.isDir() ? info.absoluteFilePath() : info.absolutePath());
    event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    QMainWindow::closeEvent(event);
}

void MainWindow::screenshotWhenLoaded(const QString& path)
{
    m_screenshotPath = path;
}

void MainWindow::maybeTakeScreenshot()
{
    if (m_screenshotPath.isEmpty() || !m_loaded ||
        (m_snapshot.error.isEmpty() && (m_layerPending || m_heatmapPending || m_replayPending || m_scanPending || m_checkpointPending)))
        return;
    const QString path = m_screenshotPath;
    m_screenshotPath.clear();
    // Let queued replots run before grabbing the window.
    QTimer::singleShot(100, this, [this, path] { emit screenshotDone(grab().save(path)); });
}

} // namespace nanscope
