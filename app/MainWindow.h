#pragma once

#include "RunSession.h"

#include <QMainWindow>
#include <QPointer>

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

namespace nanscope {

class ChildProgram;

class BatchNormView;
class CheckpointLoader;
class CheckpointsView;
class IncidentModel;
class HeatmapView;
class LayerDetailView;
class LayerTreeModel;
class OverviewView;
class ReplayProcess;
class ReplayView;
class SeriesPlot;

// The window a user lives in. Wiring only: the RunSession (on its own thread) reads, the views
// show, and the window's context (selected step, selected layer) keeps every view in sync.
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    enum class View { Overview, Layers, Heatmap, BatchNorm, Checkpoints, Replay };

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    void openRun(const QString& directory);
    void showView(View view);
    // Renders the window to `path` once the run (and a requested layer) has loaded, then emits
    // screenshotDone.
    void screenshotWhenLoaded(const QString& path);
    void setInitialSelection(qint64 step, const QString& layer);

    const RunSnapshot& snapshot() const { return m_snapshot; }
    QString errorText() const;
    OverviewView* overview() const { return m_overview; }
    HeatmapView* heatmap() const { return m_heatmap; }
    LayerDetailView* layerDetail() const { return m_layerDetail; }
    BatchNormView* batchNorm() const { return m_batchNorm; }
    ReplayView* replay() const { return m_replay; }
    CheckpointsView* checkpoints() const { return m_checkpoints; }
    // Replays a step (with the replay view's precision and mode) in a child process.
    void runReplay(const ReplayRequest& request);
    // The nanscope executable that replays (default: this program; tests point it elsewhere).
    void setReplayProgram(const QString& program);
    LayerTreeModel* layerModel() const { return m_layerModel; }
    IncidentModel* incidentModel() const { return m_incidentModel; }
    // Moves the plots to an incident and selects its first bad layer.
    void showIncident(int row);
    QSortFilterProxyModel* layerFilter() const { return m_layerFilter; }
    qint64 selectedStep() const { return m_selectedStep; }
    QString selectedLayer() const { return m_selectedLayer; }
    QStringList recentRuns() const;

public slots:
    void selectStep(qint64 step);
    void selectLayer(const QString& layer);

signals:
    void runLoaded(bool ok);
    // The gradient heatmap and the layers' health, which follow the overview.
    void layersJudged();
    void layerShown(const QString& layer);
    void replayFinished(bool ok);
    void checkpointShown(qint64 step);
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
    void buildMenus();
    void chooseRun();
    void exportReport();
    void onLoaded(const RunSnapshot& snapshot);
    void onGrew(const RunSnapshot& snapshot);
    void showSnapshot(const RunSnapshot& snapshot);
    void onHeatmap(const LayerHeatmap& heatmap);
    void showLayerTree();
    void selectFirstBadLayer();
    void updateStatus();
    void onProgress(int percent, const QString& what);
    void rememberRun(const QString& directory);
    void updateRecentMenu();
    void maybeTakeScreenshot();
    void onScanned(const ScanReport& report);
    QString parameterForLayer(const QString& layer) const;

    QThread* m_sessionThread = nullptr;
    RunSession* m_session = nullptr;
    RunSnapshot m_snapshot;

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
    ChildProgram* m_exportChild = nullptr; // `nanscope report` for Export Incident Report
    LayerTreeModel* m_layerModel = nullptr;
    QSortFilterProxyModel* m_layerFilter = nullptr;
    QTreeView* m_layerTree = nullptr;
    IncidentModel* m_incidentModel = nullptr;
    QTableView* m_incidentTable = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QMenu* m_recentMenu = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancel = nullptr;
    QLabel* m_statusRun = nullptr;

    qint64 m_selectedStep = -1;
    QString m_selectedLayer;
    qint64 m_initialStep = -1;
    QString m_initialLayer;
    QString m_screenshotPath;
    QString m_replayProgram;
    bool m_loaded = false;
    bool m_layerPending = false;
    bool m_heatmapPending = false;
    bool m_replayPending = false;
    bool m_scanPending = false;
    bool m_checkpointPending = false;
    std::vector<LayerHealth> m_layerHealth;
};

} // namespace nanscope
