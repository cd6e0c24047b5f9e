#pragma once

#include "widgets/RunContext.h"
#include "app/window/RunSession.h"

#include <QMainWindow>
#include <QPointer>
#include <QTemporaryFile>

#include <memory>

#include <optional>

class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;
class QTabWidget;
class QThread;
class QToolButton;
class QTreeView;
class QAction;

namespace nanscope {

class ChildProgram;
class ComparedRuns;
class ScreenshotController;
class BatchNormView;
class CheckpointLoader;
class CheckpointsView;
class IncidentModel;
class RankControls;
class HeatmapView;
class LayerDetailView;
class LayerTreeModel;
class OverviewView;
class ReplayProcess;
class ReplayView;
class SeriesPlot;

// The window a user lives in. Wiring only: the RunSession (on its own thread) reads, the
// RunContext holds the run and the selection, and every view follows the context's signals.
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    enum class View { Overview, Layers, Heatmap, BatchNorm, Checkpoints, Replay };

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens a run directory, or the directory of the run.h5 file given.
    void openRun(const QString& path);
    void showView(View view);
    // Renders the window to `path` once the run and everything it shows have arrived, then emits
    // screenshotDone.
    void screenshotWhenLoaded(const QString& path);
    void setInitialSelection(qint64 step, const QString& layer);
    // The scan settings every run opened after this call is judged with (`nanscope RUN --config
    // FILE`): the window's scan, its BatchNorm view and the report it exports (passed `--config file`).
    void setScanSettings(const ScanConfig& config, const QString& file);

    RunContext* context() const { return m_context; }
    const RunSnapshot& snapshot() const { return m_context->snapshot(); }
    QString errorText() const;
    OverviewView* overview() const { return m_overview; }
    HeatmapView* heatmap() const { return m_heatmap; }
    LayerDetailView* layerDetail() const { return m_layerDetail; }
    BatchNormView* batchNorm() const { return m_batchNorm; }
    ReplayView* replay() const { return m_replay; }
    CheckpointsView* checkpoints() const { return m_checkpoints; }
    // Why the last open failed, while the run shown before stayed (empty after a good open).
    QString openFailure() const { return m_openFailure; }
    // Where the open, compare and export dialogs start: the folder of the run shown, else that of
    // the last run opened, else home. Never the run directory itself (nanscope writes nothing there).
    QString dialogFolder() const;
    // Replays a step (with the replay view's precision and mode) in a child process.
    void runReplay(const ReplayRequest& request);
    // The nanscope executable that replays (default: this program; tests point it elsewhere).
    void setReplayProgram(const QString& program);
    LayerTreeModel* layerModel() const { return m_layerModel; }
    IncidentModel* incidentModel() const { return m_incidentModel; }
    QTableView* incidentTable() const { return m_incidentTable; }
    RankControls* rankControls() const { return m_rankControls; }
    // Moves the plots to an incident and selects its first bad layer.
    void showIncident(int row);
    QSortFilterProxyModel* layerFilter() const { return m_layerFilter; }
    qint64 selectedStep() const { return m_context->selectedStep(); }
    QString selectedLayer() const { return m_context->selectedLayer(); }
    QStringList recentRuns() const;
    QString statusText() const;
    QAction* reloadAction() const { return m_reloadAction; }
    QAction* exportAction() const { return m_exportAction; }
    // Writes the incident report (File > Export Incident Report, after its dialog) in a child
    // process, with its progress and a Cancel button in the status bar; emits reportExported.
    void exportReportTo(const QString& path);
    // Overlays another run on the open one (File > Compare With Run...).
    void compareWith(const QString& path);
    ComparedRuns* comparedRuns() const { return m_comparedRuns; }

public slots:
    void selectStep(qint64 step);
    void selectLayer(const QString& layer);

signals:
    void runLoaded(bool ok);
    // The layers' health, judged from the scan.
    void layersJudged();
    void layerShown(const QString& layer);
    void replayFinished(bool ok);
    void triageFinished(bool ok);
    void checkpointShown(qint64 step);
    // An export ended: written, failed (the status line says why) or cancelled (`ok` false).
    void reportExported(bool ok);
    void incidentsFound(int count);
    void screenshotDone(bool saved);
    // To the session thread.
    void openRequested(const QString& directory);
    void layerDetailRequested(const QString& layer);
    void heatmapRequested(int quantity);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildTabs();
    void buildStatusBar();
    void buildMenus();
    void connectSession();
    void connectViewsToContext();
    void connectViewRequests();
    void chooseRun();
    // A single log file (an event file, a DeepSpeed log) rather than a folder.
    void chooseLogFile();
    void exportReport();
    void cancelReportExport();
    void onLoaded(const RunSnapshot& snapshot);
    void onProgress(int percent, const QString& what);
    // Context subscribers.
    void clearViews();
    // The page, title and actions of a run loaded (before the views get it), then the rest.
    void showRunFrame(const RunSnapshot& snapshot);
    void showRun(const RunSnapshot& snapshot);
    // The layer tree, the tabs that have something to show and the status line, for a run loaded or grown.
    void showSnapshot(const RunSnapshot& snapshot);
    // A tab that has nothing to show for this run is greyed out; its tooltip, the only text a
    // disabled tab can show, says why. Every tab says it the same way.
    void setTabAvailable(View view, bool available, const QString& whyNot);
    void showScan(const ScanReport& scan);
    // The incident dock: the table, or "no incidents" after a scan that found none.
    void showIncidentTableOrNone(bool none);
    void chooseIncidentAfterRankSwitch();
    void showLayer(const QString& layer);
    void showLayerTree();
    void selectFirstBadLayer();
    void updateStatus();
    void rememberRun(const QString& directory);
    void updateRecentMenu();
    QString parameterForLayer(const QString& layer) const;
    // Draws the shown incident's precursor in the Overview from a layer's detail, when it is that
    // layer's (or hides it when the incident has none).
    void showPrecursorFrom(const LayerDetail& detail);
    // Remembers (or forgets) the precursor of an incident about to be shown.
    void followPrecursorOf(const Incident& incident);

    QThread* m_sessionThread = nullptr;
    RunSession* m_session = nullptr;
    RunContext* m_context = nullptr;
    ScreenshotController* m_screenshot = nullptr;

    QStackedWidget* m_pages = nullptr;
    QLabel* m_placeholder = nullptr;
    QLabel* m_errorLabel = nullptr;
    QTabWidget* m_tabs = nullptr;
    OverviewView* m_overview = nullptr;
    LayerDetailView* m_layerDetail = nullptr;
    HeatmapView* m_heatmap = nullptr;
    BatchNormView* m_batchNorm = nullptr;
    ReplayView* m_replay = nullptr;
    CheckpointsView* m_checkpoints = nullptr;
    CheckpointLoader* m_checkpointLoader = nullptr;
    ReplayProcess* m_replayProcess = nullptr;
    ChildProgram* m_triageChild = nullptr; // `nanscope triage --json` for the replay pane's Triage
    ChildProgram* m_exportChild = nullptr; // `nanscope report` for Export Incident Report
    QString m_exportPath;                  // the report being written, while it is
    ComparedRuns* m_comparedRuns = nullptr;
    LayerTreeModel* m_layerModel = nullptr;
    QSortFilterProxyModel* m_layerFilter = nullptr;
    QTreeView* m_layerTree = nullptr;
    IncidentModel* m_incidentModel = nullptr;
    RankControls* m_rankControls = nullptr;
    QTableView* m_incidentTable = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_reloadAction = nullptr;
    QAction* m_exportAction = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancel = nullptr;
    QLabel* m_statusRun = nullptr;
    bool m_replayStepDefaulted = false; // the replay pane was set to the worst incident's step

    QString m_loadingDirectory; // the run asked for, until it has loaded or failed
    QString m_openFailure;      // why the last open failed while another run stayed shown
    std::unique_ptr<QTemporaryFile> m_replayForReport; // the pane's replay, handed to the report's child
    // An incident chosen on another rank, until that rank's run and the scan have arrived.
    std::optional<Incident> m_incidentAfterRankSwitch;
    // The precursor of the incident shown (its evidence series: "activations/logits",
    // "layers/param_norm/router.weight"), drawn in the Overview once its layer's detail arrives.
    QString m_precursorSeries;
    QString m_replayProgram;
    QString m_scanSettingsFile; // the --config file, for the report's child
    bool m_grewSinceOpen = false; // "following live" only for a run that is being written
    QString m_scanError;          // why the scan of the open run failed, shown in the status bar
};

} // namespace nanscope
