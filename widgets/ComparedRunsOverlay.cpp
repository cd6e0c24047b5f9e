#include "ComparedRunsOverlay.h"

#include "OverviewView.h"
#include "SeriesPlot.h"

#include <qcustomplot.h>

#include <QFileInfo>

#include <cmath>

namespace nanscope {

namespace {

// "loss" -> "loss"; "eval/eval_loss" (a table of its own logging rate) -> "eval_loss": runs are
// compared by series name, whichever table of theirs logs it.
std::string seriesNameOf(const SeriesPlot* plot)
{
    QString key = plot->objectName();
    key.remove(0, QString("overview.").size());
    return key.mid(key.lastIndexOf('/') + 1).toStdString();
}

// Widens a plot's value axis to hold another run's values as well, with the margin SeriesPlot
// gives its own on a log axis (a blown-up run spans tens of decades).
void includeValues(SeriesPlot* plot, const QCPRange& values)
{
    QCPAxis* axis = plot->plot()->yAxis;
    QCPRange shown = axis->range();
    if (!plot->logScale()) {
        const double margin = (values.upper - values.lower) * 0.08;
        axis->setRange(std::min(shown.lower, values.lower - margin), std::max(shown.upper, values.upper + margin));
        return;
    }
    shown = QCPRange(std::min(shown.lower, std::max(values.lower, 1e-300) / 2), std::max(shown.upper, values.upper * 2));
    axis->setRange(shown); // SeriesPlot's ValueAxisTicker picks 1-2-5 or power-of-ten ticks for the new span
}

} // namespace

ComparedRunsOverlay::ComparedRunsOverlay(OverviewView* overview)
    : QObject(overview)
    , m_overview(overview)
{
}

QColor ComparedRunsOverlay::runColour(size_t run)
{
    // Run 0 is SeriesPlot's own blue; the others avoid the incident bands' reds and oranges and
    // the evaluation overlay's green.
    static const QColor colours[] = {QColor(37, 99, 235),  QColor(147, 51, 234), QColor(202, 138, 4),
                                     QColor(13, 148, 136), QColor(219, 39, 119), QColor(71, 85, 105)};
    return colours[run % (sizeof colours / sizeof colours[0])];
}

QString ComparedRunsOverlay::runName(const ComparedRun& run, size_t index)
{
    const QChar letter = index < 26 ? QChar('A' + int(index)) : QChar('?');
    QString name = QString::fromStdString(run.scan.runName);
    if (name.isEmpty())
        name = QFileInfo(QString::fromStdString(run.label)).fileName();
    return QString("%1: %2").arg(letter).arg(name);
}

void ComparedRunsOverlay::show(const RunComparison& comparison)
{
    clear();
    if (comparison.runs.size() < 2)
        return;
    m_comparison = comparison;
    m_visible.assign(comparison.runs.size(), true);
    for (SeriesPlot* plot : m_overview->plots())
        if (!plot->isHidden())
            drawOn(plot);
    // A plot added later from the Series menu gets the compared runs too.
    m_connections << connect(m_overview, &OverviewView::plotAdded, this, [this](SeriesPlot* plot) {
        if (!plot->isHidden()) {
            drawOn(plot);
            applyVisibility();
        }
    });
    // The shared step axis spans every run: a compared run may go on past the open one.
    if (m_drawn.empty())
        return;
    QCPRange steps = m_drawn.front().plot->plot()->xAxis->range();
    for (const Drawn& drawn : m_drawn) {
        bool found = false;
        const QCPRange keys = drawn.graph->getKeyRange(found);
        if (found)
            steps = QCPRange(std::min(steps.lower, keys.lower), std::max(steps.upper, keys.upper));
    }
    m_overview->showStepRange(steps.lower, steps.upper);
}

void ComparedRunsOverlay::drawOn(SeriesPlot* plot)
{
    const RunComparison& comparison = m_comparison;
    QCustomPlot* custom = plot->plot();
    const std::string series = seriesNameOf(plot);
    QCPGraph* own = custom->graph(0);
    PlotState state{plot, own->name()};
    bool drewAny = false;
    bool valuesFound = false;
    QCPRange values;
    for (size_t run = 1; run < comparison.runs.size(); ++run) {
        auto it = comparison.runs[run].series.find(series);
        if (it == comparison.runs[run].series.end())
            continue;
        const bool logScale = plot->logScale();
        QVector<double> x, y;
        for (size_t i = 0; i < it->second.size(); ++i) {
            const double v = it->second.values[i];
            x << double(it->second.steps[i]);
            // A gap where the value is not finite (or not drawable on a log axis), as the
            // plot's own series shows it.
            y << (std::isfinite(v) && !(logScale && v <= 0) ? v : std::nan(""));
        }
        QCPGraph* graph = custom->addGraph();
        graph->setProperty(kComparedRunProperty, true);
        graph->setName(runName(comparison.runs[run], run));
        graph->setPen(QPen(runColour(run), 1));
        graph->setAdaptiveSampling(true);
        graph->setData(x, y, true);
        m_drawn.push_back({plot, run, graph});
        drewAny = true;
        bool found = false;
        const QCPRange r = graph->getValueRange(found, logScale ? QCP::sdPositive : QCP::sdBoth);
        if (found)
            values = valuesFound ? QCPRange(std::min(values.lower, r.lower), std::max(values.upper, r.upper)) : r;
        valuesFound = valuesFound || found;
    }
    m_plotStates.push_back(state);
    if (!drewAny)
        return;
    // The legend names runs: the plot's own series is run A's.
    own->setName(runName(comparison.runs[0], 0)); // the legend (SeriesPlot::updateLegend) names every run
    plot->updateLegend();
    if (valuesFound)
        includeValues(plot, values);
    m_connections << connect(custom, &QCustomPlot::legendClick, this,
                             [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) { onLegendClick(item); });
    custom->replot(QCustomPlot::rpQueuedReplot);
}

void ComparedRunsOverlay::clear()
{
    for (const QMetaObject::Connection& c : std::as_const(m_connections))
        disconnect(c);
    m_connections.clear();
    for (const Drawn& drawn : m_drawn)
        if (drawn.plot)
            drawn.plot->plot()->removeGraph(drawn.graph);
    m_drawn.clear();
    for (const PlotState& state : m_plotStates) {
        if (!state.plot)
            continue;
        QCustomPlot* custom = state.plot->plot();
        custom->graph(0)->setVisible(true);
        state.plot->setSeriesName(state.seriesName);
        // A plot emptied meanwhile (its run closed) keeps the legend it was given then.
        if (custom->graph(0)->dataCount() > 0) {
            state.plot->updateLegend();
            // The ranges were stretched to the compared runs (a 1e30 loss flattens the rest):
            // back to the open run's own.
            state.plot->resetZoom();
        }
        custom->replot(QCustomPlot::rpQueuedReplot);
    }
    m_plotStates.clear();
    m_visible.clear();
    m_comparison = RunComparison{};
}

bool ComparedRunsOverlay::runVisible(size_t run) const
{
    return run < m_visible.size() && m_visible[run];
}

void ComparedRunsOverlay::setRunVisible(size_t run, bool visible)
{
    if (run >= m_visible.size() || m_visible[run] == visible)
        return;
    m_visible[run] = visible;
    applyVisibility();
}

QCPGraph* ComparedRunsOverlay::graph(const SeriesPlot* plot, size_t run) const
{
    if (run == 0)
        return plot->plot()->graphCount() > 0 ? plot->plot()->graph(0) : nullptr;
    for (const Drawn& drawn : m_drawn)
        if (drawn.plot.data() == plot && drawn.run == run)
            return drawn.graph;
    return nullptr;
}

void ComparedRunsOverlay::onLegendClick(QCPAbstractLegendItem* item)
{
    auto* entry = dynamic_cast<QCPPlottableLegendItem*>(item);
    if (!entry)
        return;
    for (const PlotState& state : m_plotStates)
        if (state.plot && entry->plottable() == state.plot->plot()->graph(0)) {
            setRunVisible(0, !runVisible(0));
            return;
        }
    for (const Drawn& drawn : m_drawn)
        if (entry->plottable() == drawn.graph) {
            setRunVisible(drawn.run, !runVisible(drawn.run));
            return;
        }
}

void ComparedRunsOverlay::applyVisibility()
{
    // A hidden run keeps its legend entry, greyed, so that a click brings it back.
    const auto show = [](QCustomPlot* custom, QCPGraph* graph, bool visible) {
        graph->setVisible(visible);
        if (QCPPlottableLegendItem* entry = custom->legend->itemWithPlottable(graph))
            entry->setTextColor(visible ? QColor(Qt::black) : QColor(160, 160, 160));
    };
    for (const PlotState& state : m_plotStates) {
        if (!state.plot)
            continue;
        show(state.plot->plot(), state.plot->plot()->graph(0), runVisible(0));
        state.plot->plot()->replot(QCustomPlot::rpQueuedReplot);
    }
    for (const Drawn& drawn : m_drawn)
        if (drawn.plot)
            show(drawn.plot->plot(), drawn.graph, runVisible(drawn.run));
}

} // namespace nanscope
