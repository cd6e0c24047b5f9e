#pragma once

#include "core/compare/RunComparison.h"

#include <QColor>
#include <QList>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QString>

#include <vector>

class QCPAbstractLegendItem;
class QCPGraph;
class QCustomPlot;

namespace nanscope {

class OverviewView;
class SeriesPlot;

// Draws the compared runs' series over the overview's plots on its shared step axis: one colour
// per run, a legend on every plot naming the runs, and a click on a legend entry hides that run's
// series on every plot (a second click shows them again). The overview keeps drawing its own run
// (the comparison's runs[0]); this adds graphs for runs[1..] after the plot's own graphs.
class ComparedRunsOverlay : public QObject
{
    Q_OBJECT
public:
    explicit ComparedRunsOverlay(OverviewView* overview);

    // Draws every run but the first on the plots whose series it logs, and on plots added to the
    // overview later. Replaces what was drawn.
    void show(const RunComparison& comparison);
    // Removes every compared graph and gives the plots their own legends back.
    void clear();

    bool runVisible(size_t run) const;
    void setRunVisible(size_t run, bool visible);
    // The colour of run `run` (0 is the overview's own series colour).
    static QColor runColour(size_t run);
    // How a run is named in legends: "B: lr2e-3-divergence".
    static QString runName(const ComparedRun& run, size_t index);
    // The graph of run `run` on `plot` (run 0: the plot's own series); null when it has none there.
    QCPGraph* graph(const SeriesPlot* plot, size_t run) const;

private:
    struct Drawn
    {
        QPointer<SeriesPlot> plot; // an added plot may be removed from the overview meanwhile
        size_t run = 0;
        QCPGraph* graph = nullptr;
    };
    // Draws the compared runs' series of this plot, and remembers the plot's own legend state.
    void drawOn(SeriesPlot* plot);
    void onLegendClick(QCPAbstractLegendItem* item);
    void applyVisibility();

    OverviewView* m_overview = nullptr;
    RunComparison m_comparison; // what show() was given, for plots added later
    std::vector<Drawn> m_drawn;
    std::vector<bool> m_visible;
    // The plots' own series names and legend states, restored by clear().
    struct PlotState
    {
        QPointer<SeriesPlot> plot;
        QString seriesName;
    };
    std::vector<PlotState> m_plotStates;
    QList<QMetaObject::Connection> m_connections;
};

} // namespace nanscope
