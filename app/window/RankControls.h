#pragma once

#include <QObject>
#include <QStringList>

class QComboBox;
class QDockWidget;
class QMainWindow;
class QToolBar;

namespace nanscope {

class HeatmapView;
class RankLanes;
class RunContext;
class RunSession;

// The window's multi-rank controls: a rank selector in a toolbar (which rank's run the views
// show) and a "Ranks" dock with the rank x step heatmap (non-finite steps, local gradient norm).
// Both stay hidden for a single-process run. Built apart from the window's own wiring, which only
// creates it.
class RankControls : public QObject
{
    Q_OBJECT
public:
    RankControls(QMainWindow* window, RunSession* session, RunContext* context);

    QComboBox* selector() const { return m_selector; }
    HeatmapView* heatmap() const { return m_heatmap; }
    RankLanes* lanes() const { return m_lanes; }
    // Shows this rank's run, unless it is shown already (an incident found on another rank).
    void showRank(int rank);
    // The rank whose run the views show now (-1: a single process). Behind the selector while a
    // switch is on its way: the selector moves at once, this once the session has switched.
    int shownRank() const { return m_shownRank; }
    QDockWidget* dock() const { return m_dock; }

signals:
    void rankRequested(int rank);
    void rankHeatmapRequested(int quantity);

private:
    void showRanks(const QStringList& ranks, int shown);
    void requestRankOfRow(const QString& row);

    QToolBar* m_toolBar = nullptr;
    QComboBox* m_selector = nullptr;
    QDockWidget* m_dock = nullptr;
    HeatmapView* m_heatmap = nullptr;
    RankLanes* m_lanes = nullptr;
    int m_shownRank = -1;
};

} // namespace nanscope
