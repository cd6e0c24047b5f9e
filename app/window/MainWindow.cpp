#include "app/window/MainWindow.h"

#include "app/window/HelpMenu.h"

#include "app/window/CheckpointLoader.h"
#include "app/children/ChildProgram.h"
#include "app/window/ComparedRuns.h"
#include "app/window/RankControls.h"
#include "app/children/ReplayProcess.h"
#include "app/window/ScreenshotController.h"
#include "app/codecs/TriageJson.h"
#include "app/window/WindowDocks.h"

#include "core/run/LayerNames.h"
#include "core/run/RunFormat.h"

#include "widgets/BatchNormView.h"
#include "widgets/CheckpointsView.h"
#include "widgets/HeatmapView.h"
#include "widgets/IncidentModel.h"
#include "widgets/LayerDetailView.h"
#include "widgets/LayerTreeModel.h"
#include "widgets/OverviewView.h"
#include "widgets/ReplayView.h"
#include "widgets/SeriesPlot.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QGuiApplication>
#include <QHeaderView>
#include <QScreen>
#include <QProgressBar>
#include <QSettings>
#include <QTimer>

#include <algorithm>
#include <limits>
#include <memory>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTabWidget>
#include <QThread>
#include <QToolButton>
#include <QTreeView>

#include <utility>

// Resources compiled into a static library must be registered by hand; outside any namespace.
static void initResources()
{
    Q_INIT_RESOURCE(nanscope);
}

namespace nanscope {

namespace {
using Work = ScreenshotController::Work;
} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_sessionThread(new QThread(this))
    , m_session(new RunSession())
    , m_context(new RunContext(this))
    , m_screenshot(new ScreenshotController(this))
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
    , m_triageChild(new ChildProgram(this))
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
    // 1400x900, or the screen's free area where that is smaller (a 1280x800 laptop): a window
    // larger than its screen opens with its status bar and Incidents dock off the bottom edge.
    QSize size(1400, 900);
    if (const QScreen* screen = QGuiApplication::primaryScreen())
        size = size.boundedTo(screen->availableSize());
    resize(size);

    buildTabs();
    const LayerDock layerDock = addLayerDock(this, m_layerModel, m_layerFilter);
    m_filterEdit = layerDock.filterEdit;
    m_layerTree = layerDock.tree;
    m_incidentTable = addIncidentDock(this, m_incidentModel);
    m_comparedRuns = new ComparedRuns(this, m_context, m_overview, m_sessionThread);
    buildStatusBar();
    buildMenus();

    connectSession();
    connectViewsToContext();
    connectViewRequests();
    connect(m_screenshot, &ScreenshotController::done, this, &MainWindow::screenshotDone);
    connect(m_comparedRuns, &ComparedRuns::comparisonDone, this, [this] { m_screenshot->arrived(Work::Compare); });
    connect(m_comparedRuns, &ComparedRuns::stepActivated, this, &MainWindow::selectStep);
    connect(m_comparedRuns, &ComparedRuns::message, this, [this](const QString& text) { statusBar()->showMessage(text, 15000); });

    QSettings settings;
    const bool restored = restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    // A layout saved on a larger screen, or with a dock floated off it, is repaired once the window
    // knows its screen (not a window rendered offscreen for --screenshot, whose size is asked for).
    if (restored)
        QTimer::singleShot(0, this, [this] {
            if (QScreen* shown = screen(); shown && !testAttribute(Qt::WA_DontShowOnScreen))
                repairWindowLayout(this, shown->availableGeometry());
        });
    updateRecentMenu();
}

MainWindow::~MainWindow()
{
    m_session->cancel();
    m_sessionThread->quit();
    m_sessionThread->wait();
}

void MainWindow::buildTabs()
{
    m_placeholder->setText(tr("<h2>nanscope</h2><p>Open a run with <b>File \u25B8 Open Run\u2026</b> "
                              "(Ctrl+O), or drop its folder here.</p><p>A run is a nanscope run directory, a Hugging "
                              "Face Trainer output folder, a Lightning log folder, TensorBoard event files, a "
                              "DeepSpeed or Megatron log, or a folder of checkpoints.</p><p>New to nanscope? "
                              "<b>Help ▸ Open a Demo Run</b> opens a run that blows up, and <b>Help ▸ "
                              "User Guide</b> (F1) says what each view shows.</p>"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    // Wrapped: unwrapped, its longest line set the window's least width past 1024 pixels.
    m_placeholder->setWordWrap(true);
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
}

void MainWindow::buildStatusBar()
{
    m_progress = new QProgressBar(this);
    m_progress->setMaximumWidth(220);
    m_progress->setVisible(false);
    m_cancel = new QToolButton(this);
    m_cancel->setText(tr("Cancel"));
    m_cancel->setVisible(false);
    m_statusRun = new QLabel(tr("No run loaded"), this);
    // A long summary is cut at the window's edge rather than widening the window past the screen.
    m_statusRun->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    statusBar()->addWidget(m_statusRun, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    // One Cancel for the long work shown beside it: the report being written, else the session's.
    connect(m_cancel, &QToolButton::clicked, this, [this] {
        if (m_exportChild->isRunning())
            cancelReportExport();
        else
            m_session->cancel();
    });
    connect(m_exportChild, &ChildProgram::progress, this, [this](int percent, const QString& what) {
        m_progress->setValue(percent);
        m_progress->setFormat(tr("Report  %p%"));
        statusBar()->showMessage(tr("Writing %1: %2\u2026").arg(QFileInfo(m_exportPath).fileName(), what));
    });
}

void MainWindow::openRun(const QString& path)
{
    // A nanscope run is its directory; a file manager (nanscope.desktop's %f) or a drop may hand
    // over the run.h5 inside it, and everything else (checkpoints/, batches/, recent runs) hangs off
    // the folder. Any other file (a trainer_state.json, an event file, a DeepSpeed log) is read as
    // itself: its folder may hold other runs' logs.
    const QFileInfo given(path);
    const QString directory = given.isFile() && given.fileName() == runformat::kLogFileName ? given.absolutePath() : path;
    // The run on screen stays until the new one has opened (onLoaded): an open that fails leaves
    // it as it was, compared runs and all.
    m_loadingDirectory = directory;
    m_statusRun->setText(tr("Loading %1\u2026").arg(directory));
    emit openRequested(directory);
}

void MainWindow::compareWith(const QString& path)
{
    m_comparedRuns->addRun(path);
}

void MainWindow::screenshotWhenLoaded(const QString& path)
{
    m_screenshot->request(path);
}

void MainWindow::onLoaded(const RunSnapshot& snapshot)
{
    if (QFileInfo(snapshot.directory) != QFileInfo(m_loadingDirectory) && !m_loadingDirectory.isEmpty())
        return; // an open the user has since replaced
    m_loadingDirectory.clear();
    if (!snapshot.error.isEmpty() && m_context->hasRun()) {
        // A failed open keeps the run shown, with its views and incident table as they were: say
        // what failed, and go on showing it.
        const RunSnapshot& shown = this->snapshot();
        updateStatus(); // "Loading ..." gives way to the shown run's line again
        const QString message = tr("Cannot open %1: %2\n\nStill showing %3.").arg(snapshot.directory, snapshot.error,
                                                                               shown.directory);
        statusBar()->showMessage(tr("Cannot open %1; still showing %2").arg(snapshot.directory, shown.directory), 15000);
        m_openFailure = message;
        auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot open this run"), message, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        emit runLoaded(false);
        m_screenshot->runFailed();
        return;
    }
    // Compared runs belong to the run they were compared with: another run closes them (a reload
    // of the same run compares them with it again).
    const QString shown = m_context->hasRun() ? this->snapshot().directory : QString();
    if (!shown.isEmpty() && QFileInfo(shown).absoluteFilePath() != QFileInfo(snapshot.directory).absoluteFilePath())
        m_comparedRuns->closeRuns();
    showIncidentTableOrNone(false); // the run's scan decides
    m_grewSinceOpen = false;
    m_replayStepDefaulted = false;
    m_scanError.clear();
    m_openFailure.clear();
    m_context->setRun(snapshot);
    if (snapshot.error.isEmpty()) // however it was opened: a dialog, the recent list, a drop, the command line
        QSettings().setValue("lastOpenDir", QFileInfo(QFileInfo(snapshot.directory).absoluteFilePath()).absolutePath());
    if (!snapshot.error.isEmpty()) {
        m_errorLabel->setText(tr("Cannot open this run.\n\n%1").arg(snapshot.error));
        m_pages->setCurrentWidget(m_errorLabel);
        m_statusRun->setText(tr("Failed to load %1").arg(snapshot.directory));
        setWindowTitle("nanscope");
        emit runLoaded(false);
        m_screenshot->runFailed();
        return;
    }
    emit runLoaded(true);
    m_screenshot->arrived(Work::Run);
}

void MainWindow::clearViews()
{
    m_precursorSeries.clear(); // the Overview hides its plot as it clears (OverviewView::clear)
    m_replayProcess->cancel();
    m_triageChild->cancel();
    m_layerModel->setLayers({}, {});
    m_filterEdit->clear();
    m_reloadAction->setEnabled(false);
    m_exportAction->setEnabled(false);
    m_pages->setCurrentWidget(m_placeholder);
    setWindowTitle("nanscope");
    m_statusRun->setText(tr("No run loaded"));
}

void MainWindow::showRunFrame(const RunSnapshot& snapshot)
{
    rememberRun(snapshot.directory);
    m_pages->setCurrentWidget(m_tabs);
    setWindowTitle(QString("%1 \u2014 nanscope").arg(QString::fromStdString(snapshot.info.runName)));
    m_reloadAction->setEnabled(true);
    m_exportAction->setEnabled(true);
}

void MainWindow::showRun(const RunSnapshot& snapshot)
{
    m_screenshot->expect(Work::Scan);
    if (m_comparedRuns->hasRuns())
        m_screenshot->expect(Work::Compare);
    if (!snapshot.layers.empty())
        m_screenshot->expect(Work::Heatmap);
    showSnapshot(snapshot);
    if (!m_context->startLayer().isEmpty())
        selectLayer(m_context->startLayer());
    if (m_context->startStep() >= 0)
        selectStep(m_context->startStep());
    if (m_tabs->currentIndex() == int(View::Replay) && m_context->startStep() >= 0 && m_screenshot->requested())
        runReplay(m_replay->request()); // a screenshot of the replay view shows a replay
}

void MainWindow::showSnapshot(const RunSnapshot& snapshot)
{
    // The views show the run themselves (they follow the context); the window shows the layer
    // tree and which tabs have something to show.
    showLayerTree();
    setTabAvailable(View::Heatmap, !snapshot.layers.empty(),
                    tr("No per-layer table in this run (/layers): the heatmap plots each parameter's gradient norm "
                       "over the steps, and this log has none."));
    setTabAvailable(View::BatchNorm, !snapshot.batchNorm.empty(),
                    tr("No normalisation statistics in this run (/buffers): the model has no BatchNorm layer, or "
                       "its log does not record their running mean and variance."));
    setTabAvailable(View::Checkpoints, !snapshot.info.checkpoints.empty(),
                    tr("No checkpoints in this run: tensor statistics, histograms and diffs need saved weights "
                       "(checkpoints/step_N.pt, or checkpoint-N/ folders)."));
    setTabAvailable(View::Replay, !snapshot.info.replayableSteps().empty(),
                    QString::fromStdString(snapshot.info.whyNothingReplays()));
    updateStatus();
}

void MainWindow::setTabAvailable(View view, bool available, const QString& whyNot)
{
    m_tabs->setTabEnabled(int(view), available);
    m_tabs->setTabToolTip(int(view), available ? QString() : whyNot);
}

void MainWindow::showIncidentTableOrNone(bool none)
{
    if (auto* pages = qobject_cast<QStackedWidget*>(m_incidentTable->parentWidget()))
        pages->setCurrentIndex(none ? 1 : 0);
}

void MainWindow::showScan(const ScanReport& scan)
{
    showIncidentTableOrNone(scan.incidents.empty());
    // The replay pane starts at the worst incident's step (its first NaN, else its onset), once
    // per run: not at the first saved step, not over a step the user picked since, and not over
    // the step the window was opened at (`--step`), which the pane has already replayed.
    if (!m_replayStepDefaulted && m_context->startStep() < 0 && !scan.incidents.empty()) {
        const Incident& worst = scan.incidents.front();
        m_replay->chooseStepNear(worst.nonfiniteStep.value_or(worst.onsetStep));
        m_replayStepDefaulted = true;
    }
    m_incidentTable->setColumnHidden(IncidentModel::Rank, !m_incidentModel->hasRanks());
    m_incidentTable->resizeColumnsToContents();
    m_incidentTable->setColumnWidth(IncidentModel::Layers, std::min(m_incidentTable->columnWidth(IncidentModel::Layers), 260));
    // The cause fills what is left of the row and ends in "…" where it is longer: sized to its
    // text, it ran past the right edge of the dock. Its whole text is the row's tooltip.
    m_incidentTable->horizontalHeader()->setSectionResizeMode(IncidentModel::Cause, QHeaderView::Stretch);
    // The tree's icons come from the incidents, so that they agree with the list beside them.
    showLayerTree();
    selectFirstBadLayer();
    updateStatus();
    emit layersJudged();
    emit incidentsFound(int(scan.incidents.size()));
    chooseIncidentAfterRankSwitch();
    m_screenshot->arrived(Work::Scan);
}

void MainWindow::setReplayProgram(const QString& program)
{
    m_replayProgram = program;
    m_replayProcess->setProgram(program);
    m_triageChild->setProgram(program);
    m_checkpointLoader->setProgram(program);
}

void MainWindow::runReplay(const ReplayRequest& request)
{
    if (!m_context->hasRun() || request.step < 0)
        return;
    m_screenshot->expect(Work::Replay);
    m_replay->setRunning(true);
    statusBar()->showMessage(tr("Replaying step %1 in a child process…").arg(request.step));
    m_replayProcess->start(snapshot().directory, request, m_rankControls->shownRank());
}

void MainWindow::buildMenus()
{
    auto* fileMenu = menuBar()->addMenu(tr("&File"));
    fileMenu->addAction(tr("&Open Run\u2026"), QKeySequence::Open, this, &MainWindow::chooseRun);
    fileMenu->addAction(tr("Open Log &File\u2026"), this, &MainWindow::chooseLogFile);
    m_recentMenu = fileMenu->addMenu(tr("Open &Recent"));
    // Enabled only while a run is open: a shortcut that looks live and does nothing misleads.
    m_reloadAction = fileMenu->addAction(tr("&Reload"), QKeySequence::Refresh, this, [this] {
        if (m_context->hasRun())
            openRun(snapshot().directory);
    });
    m_exportAction = fileMenu->addAction(tr("&Export Incident Report…"), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                                         &MainWindow::exportReport);
    m_reloadAction->setEnabled(false);
    m_exportAction->setEnabled(false);
    fileMenu->addSeparator();
    m_comparedRuns->addActions(fileMenu);
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
    viewMenu->addSeparator();
    // A dock closed with its title bar's button comes back from here.
    addDockEntries(this, viewMenu->addMenu(tr("&Docks")));
    addHelpMenu(this, [this](const QString& run) { openRun(run); });
}

} // namespace nanscope
