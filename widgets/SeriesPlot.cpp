#include "SeriesPlot.h"

#include "SeriesData.h"
#include "Smoothing.h"
#include "StepAxisTicker.h"
#include "ValueAxisTicker.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {
// Pixels for the value axis and its tick labels, the same on every plot.
constexpr int kValueAxisWidth = 76;
} // namespace

namespace {
// Marker rows on the hidden right axis, which always spans [0, 1]: edges of the plot.
constexpr double kNanRow = 0.95;
constexpr double kPosInfRow = 0.985;
constexpr double kNegInfRow = 0.015;
constexpr double kMarkedRow = 0.05;
constexpr double kCheckpointRow = 0.1;

QCPGraph* addMarkerGraph(QCustomPlot* plot, const QString& name, QCPScatterStyle::ScatterShape shape, QColor colour)
{
    QCPGraph* graph = plot->addGraph(plot->xAxis, plot->yAxis2);
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(shape, colour, colour, 9));
    graph->setPen(QPen(colour));
    return graph;
}

QColor faint(QColor colour)
{
    colour.setAlpha(70);
    return colour;
}
} // namespace

SeriesPlot::SeriesPlot(const QString& title, QWidget* parent)
    : QWidget(parent)
    , m_title(title)
    , m_plot(new QCustomPlot(this))
    , m_logToggle(new QCheckBox(tr("log"), this))
    , m_readout(new QLabel(this))
{
    buildHeader(title);
    styleAxes();
    addGraphs(title);
    m_stepCursor = new QCPItemStraightLine(m_plot);
    m_stepCursor->setPen(QPen(QColor(234, 88, 12), 1.5));
    m_stepCursor->setVisible(false);
    m_hoverLine = new QCPItemStraightLine(m_plot);
    m_hoverLine->setPen(QPen(QColor(140, 140, 140), 1, Qt::DotLine));
    m_hoverLine->setVisible(false);

    connect(m_logToggle, &QCheckBox::toggled, this, &SeriesPlot::setLogScale);
    // Every replot (zoom, pan, resize) lays the incident labels out again against the right edge.
    connect(m_plot, &QCustomPlot::afterLayout, this, &SeriesPlot::placeBandLabels);
    connect(m_plot, &QCustomPlot::customContextMenuRequested, this, &SeriesPlot::showContextMenu);
    connectMouse();
}

void SeriesPlot::buildHeader(const QString& title)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    auto* header = new QHBoxLayout();
    header->setContentsMargins(6, 2, 6, 0);
    auto* titleLabel = new QLabel(QString("<b>%1</b>").arg(title.toHtmlEscaped()), this);
    header->addWidget(titleLabel);
    header->addSpacing(12);
    header->addWidget(m_readout, 1);
    header->addWidget(m_logToggle);
    layout->addLayout(header);
    layout->addWidget(m_plot, 1);
    setMinimumHeight(120);
    m_readout->setTextFormat(Qt::PlainText);
    m_readout->setStyleSheet("color: palette(window-text);"); // readable on any theme (mid was grey on grey)
}

// The axes in the palette's colours, and a value axis of fixed width.
void SeriesPlot::styleAxes()
{
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    m_plot->yAxis2->setRange(0, 1);
    m_plot->yAxis2->setVisible(false);
    // A fixed value-axis width: stacked plots share one step axis, and left margins that followed
    // their tick labels' width put the same step ~16 px apart from one plot to the next.
    m_plot->axisRect()->setAutoMargins(QCP::msTop | QCP::msRight | QCP::msBottom);
    m_plot->axisRect()->setMargins(QMargins(kValueAxisWidth, 0, 0, 0));
    m_plot->setBackground(palette().color(QPalette::Base));
    const QColor text = palette().color(QPalette::Text);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setBasePen(QPen(text));
        axis->setTickPen(QPen(text));
        axis->setSubTickPen(QPen(text));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setPen(QPen(palette().color(QPalette::Mid), 0, Qt::DotLine));
    }
    useValueTicker(false);
}

// The value line, its overlay, their raw lines behind them when smoothed, the fitted trend and the
// marker rows, and the legend that names them.
void SeriesPlot::addGraphs(const QString& title)
{
    m_values = m_plot->addGraph();
    m_values->setName(title);
    // Width 1: QCustomPlot draws wider antialiased pens ~100x slower (1,000,000 points: 1.3 s vs 12 ms).
    m_values->setPen(QPen(QColor(37, 99, 235), 1));
    m_values->setAdaptiveSampling(true);
    m_overlay = m_plot->addGraph();
    // Dark and dashed beside the blue line (an evaluation loss): green beside blue is hard to tell
    // apart, and orange, red and purple are the marks' colours.
    m_overlay->setPen(QPen(QColor(35, 35, 35), 1, Qt::DashLine));
    m_overlay->setAdaptiveSampling(true);
    m_overlay->setVisible(false);
    // The raw series behind their smoothed lines: on a layer under the main one, so the smoothed
    // line is never hidden under its own noise.
    m_plot->addLayer("raw", m_plot->layer("main"), QCustomPlot::limBelow);
    m_rawValues = m_plot->addGraph();
    m_rawOverlay = m_plot->addGraph();
    for (auto [raw, smoothed] : {std::pair{m_rawValues, m_values}, std::pair{m_rawOverlay, m_overlay}}) {
        raw->setLayer("raw");
        raw->setPen(QPen(faint(smoothed->pen().color()), 1));
        raw->setAdaptiveSampling(true);
        raw->setVisible(false);
        raw->removeFromLegend();
    }
    m_trend = m_plot->addGraph();
    m_trend->setPen(QPen(QColor(200, 40, 40), 2, Qt::DashLine));
    m_trend->setName(tr("fitted trend"));
    m_nanMarkers = addMarkerGraph(m_plot, "NaN", QCPScatterStyle::ssCross, QColor(220, 30, 30));
    m_posInfMarkers = addMarkerGraph(m_plot, "+Inf", QCPScatterStyle::ssTriangle, QColor(230, 120, 0));
    m_negInfMarkers = addMarkerGraph(m_plot, "-Inf", QCPScatterStyle::ssTriangleInverted, QColor(140, 60, 200));
    m_marked = addMarkerGraph(m_plot, tr("skipped"), QCPScatterStyle::ssDiamond, QColor(120, 120, 120));
    m_checkpoints = addMarkerGraph(m_plot, tr("checkpoint"), QCPScatterStyle::ssStar, QColor(16, 120, 200));
    m_ownGraphCount = m_plot->graphCount();
    // The legend names every glyph drawn (updateLegend), in rows of four at the top left: incident
    // labels sit at the right, where runs end.
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setWrap(4);
    m_plot->legend->setBrush(QColor(255, 255, 255, 200));
    m_plot->legend->setIconSize(14, 10);
    QFont legendFont = font();
    legendFont.setPointSizeF(std::max(6.0, legendFont.pointSizeF() * 0.85));
    m_plot->legend->setFont(legendFont);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    connect(m_plot, &QCustomPlot::beforeReplot, this, &SeriesPlot::updateLegend);
}

void SeriesPlot::setSeries(const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    m_steps = steps;
    m_data = values;
    // A series below zero (a negative log-likelihood, a policy-gradient loss) cannot be drawn on a
    // log axis: it would show an empty plot. The log box stays for the user to tick again.
    if (m_logScale && std::any_of(values.begin(), values.end(), [](double v) { return std::isfinite(v) && v < 0; }))
        setLogScale(false);
    applyData();
}

void SeriesPlot::clear()
{
    m_steps.clear();
    m_data.clear();
    m_overlaySteps.clear();
    m_overlayData.clear();
    m_overlay->setVisible(false);
    setMarkedSteps({}, m_marked->name());
    setCheckpointSteps({});
    clearBands();
    m_stepCursor->setVisible(false);
    m_hoverLine->setVisible(false);
    m_readout->clear();
    m_hoverStep.reset();
    applyData();
}

void SeriesPlot::resetZoom()
{
    rescale(true);
    emit stepRangeChanged(m_plot->xAxis->range().lower, m_plot->xAxis->range().upper);
}

void SeriesPlot::setSeriesName(const QString& name)
{
    m_values->setName(name);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setOverlay(const QString& name, const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    m_overlay->setName(name);
    m_overlaySteps = steps;
    m_overlayData = values;
    m_overlay->setVisible(!steps.empty());
    applyData();
}

void SeriesPlot::applyData(bool fitSteps)
{
    // The markers come from the raw values: smoothing passes non-finite values through, and a
    // NaN must stay marked however smooth the line around it is.
    SplitSeries main = splitSeries(m_steps, m_data, m_logScale);
    SplitSeries overlay = splitSeries(m_overlaySteps, m_overlayData, m_logScale);
    m_nanCount = main.nanX.size();
    m_posInfCount = main.posX.size();
    m_negInfCount = main.negX.size();
    m_smoothed = smoothEma(m_data, m_smoothing);
    m_overlaySmoothed = smoothEma(m_overlayData, m_smoothing);
    const bool smoothing = m_smoothing > 0;
    if (smoothing) {
        SplitSeries smoothedMain = splitSeries(m_steps, m_smoothed, m_logScale);
        SplitSeries smoothedOverlay = splitSeries(m_overlaySteps, m_overlaySmoothed, m_logScale);
        m_values->setData(smoothedMain.x, smoothedMain.y, true);
        m_overlay->setData(smoothedOverlay.x, smoothedOverlay.y, true);
        m_rawValues->setData(main.x, main.y, true);
        m_rawOverlay->setData(overlay.x, overlay.y, true);
    } else {
        m_values->setData(main.x, main.y, true);
        m_overlay->setData(overlay.x, overlay.y, true);
        m_rawValues->data()->clear();
        m_rawOverlay->data()->clear();
    }
    m_rawValues->setVisible(smoothing);
    m_rawOverlay->setVisible(smoothing && m_overlay->visible());
    // Overlay non-finite steps join the main markers: a NaN is a NaN whichever series holds it.
    auto merged = [](QVector<double> a, const QVector<double>& b) {
        a += b;
        std::sort(a.begin(), a.end());
        return a;
    };
    const QVector<double> nanX = merged(main.nanX, overlay.nanX);
    const QVector<double> posX = merged(main.posX, overlay.posX);
    const QVector<double> negX = merged(main.negX, overlay.negX);
    m_nanMarkers->setData(nanX, QVector<double>(nanX.size(), kNanRow), true);
    m_posInfMarkers->setData(posX, QVector<double>(posX.size(), kPosInfRow), true);
    m_negInfMarkers->setData(negX, QVector<double>(negX.size(), kNegInfRow), true);
    rescale(fitSteps);
    if (m_hoverStep)
        showReadoutAt(*m_hoverStep);
}

void SeriesPlot::setSmoothing(double weight)
{
    weight = std::clamp(weight, 0.0, kMaxSmoothingWeight);
    if (weight == m_smoothing)
        return;
    m_smoothing = weight;
    applyData(false); // smoothing changes values, never the user's steps
}

void SeriesPlot::setMarkedSteps(const std::vector<int64_t>& steps, const QString& label)
{
    QVector<double> x;
    for (int64_t s : steps)
        x << double(s);
    m_markedCount = x.size();
    m_marked->setName(label);
    m_marked->setData(x, QVector<double>(x.size(), kMarkedRow), true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setCheckpointSteps(const std::vector<int64_t>& steps)
{
    QVector<double> x;
    for (int64_t s : steps)
        x << double(s);
    m_checkpointCount = x.size();
    m_checkpoints->setData(x, QVector<double>(x.size(), kCheckpointRow), true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setLogScale(bool logScale)
{
    m_logScale = logScale;
    if (m_logToggle->isChecked() != logScale)
        m_logToggle->setChecked(logScale);
    m_plot->yAxis->setScaleType(logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    useValueTicker(logScale);
    applyData(false);
}

void SeriesPlot::useValueTicker(bool logarithmic)
{
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ValueAxisTicker(logarithmic)));
    m_plot->yAxis->setNumberFormat("gb");
    m_plot->yAxis->setNumberPrecision(4); // the fewest digits; ValueAxisTicker adds what neighbours need
}

void SeriesPlot::setSelectedStep(int64_t step)
{
    m_stepCursor->point1->setCoords(double(step), 0);
    m_stepCursor->point2->setCoords(double(step), 1);
    m_stepCursor->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setStepRange(double lower, double upper)
{
    m_syncingRange = true;
    m_plot->xAxis->setRange(lower, upper);
    m_syncingRange = false;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::addBand(double fromStep, double toStep, const QColor& colour, const QString& label)
{
    auto* band = new QCPItemRect(m_plot);
    band->topLeft->setTypeX(QCPItemPosition::ptPlotCoords);
    band->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    band->bottomRight->setTypeX(QCPItemPosition::ptPlotCoords);
    band->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    band->topLeft->setCoords(fromStep, 0);
    band->bottomRight->setCoords(std::max(toStep, fromStep + 0.5), 1);
    band->setPen(QPen(colour.darker(120), 1));
    QColor fill = colour;
    fill.setAlpha(60);
    band->setBrush(fill);
    band->setLayer("background");
    m_bands.push_back(band);
    if (!label.isEmpty()) {
        auto* text = new QCPItemText(m_plot);
        text->position->setTypeX(QCPItemPosition::ptPlotCoords);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        // Rows are laid out in pixels by placeBandLabels, at every replot.
        text->position->setCoords(fromStep, 0);
        text->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        text->setText(label);
        text->setColor(colour.darker(160));
        QColor backing = m_plot->palette().color(QPalette::Base);
        backing.setAlpha(210);
        text->setBrush(backing);
        text->setPadding(QMargins(3, 1, 3, 1));
        m_bandLabels.push_back(text);
        placeBandLabels();
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::placeBandLabels()
{
    // Incidents at one step (a blow-up, its bad input, a rank's NaN) stack instead of printing
    // over each other, and keep off the legend (stackBandLabels). A label with no free row is
    // hidden: its band stays, and the incident table lists it.
    const QRect area = m_plot->axisRect()->rect();
    if (area.height() <= 0)
        return;
    std::vector<BandLabel> labels;
    for (QCPItemText* text : m_bandLabels) {
        const QFontMetrics metrics(text->font());
        // Clamped: zoomed far in, a band out of view lies billions of pixels away (no int holds it).
        const double x = std::clamp(m_plot->xAxis->coordToPixel(text->position->key()), -1e6, 1e6);
        labels.push_back({text->text(), int(x),
                          metrics.horizontalAdvance(text->text()) + 8, metrics.height() + 3});
    }
    std::vector<QRect> taken;
    if (m_plot->legend->visible())
        taken.push_back(m_plot->legend->outerRect());
    const std::vector<std::optional<QRect>> places = stackBandLabels(labels, area, taken);
    for (size_t i = 0; i < m_bandLabels.size(); ++i) {
        QCPItemText* text = m_bandLabels[i];
        text->setVisible(places[i].has_value());
        if (!places[i])
            continue;
        const bool rightwards = places[i]->left() == labels[i].x;
        text->setPositionAlignment((rightwards ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignTop);
        text->position->setCoords(text->position->key(), double(places[i]->top() - area.top()) / area.height());
    }
}

void SeriesPlot::clearBands()
{
    for (auto* band : m_bands)
        m_plot->removeItem(band);
    for (auto* label : m_bandLabels)
        m_plot->removeItem(label);
    m_bands.clear();
    m_bandLabels.clear();
    m_trend->data()->clear();
}

std::vector<SeriesPlot::Mark> SeriesPlot::marksAt(double step, double tolerance) const
{
    const QString series = m_values->name();
    struct Kind
    {
        const QCPGraph* graph;
        QString what;
        bool ofTheValue; // the readout's value says it already
    };
    const Kind kinds[] = {
        {m_nanMarkers, tr("%1 is NaN").arg(series), true},
        {m_posInfMarkers, tr("%1 is +Inf").arg(series), true},
        {m_negInfMarkers, tr("%1 is -Inf").arg(series), true},
        {m_marked, m_marked->name() == tr("skipped") ? tr("optimizer step skipped") : m_marked->name(), false},
        {m_checkpoints, tr("checkpoint saved (the weights this step's forward ran on)"), false},
    };
    std::vector<Mark> marks;
    for (const Kind& kind : kinds) {
        const auto data = kind.graph->data();
        for (auto it = data->findBegin(step - tolerance, false); it != data->end() && it->key <= step + tolerance; ++it)
            if (std::abs(it->key - step) <= tolerance)
                marks.push_back({qint64(std::llround(it->key)), kind.what, kind.ofTheValue});
    }
    return marks;
}

QStringList SeriesPlot::marksNear(double step, double tolerance) const
{
    QStringList lines;
    for (const Mark& mark : marksAt(step, tolerance))
        lines << tr("step %1: %2").arg(mark.step).arg(mark.what);
    return lines;
}

void SeriesPlot::updateLegend()
{
    // Every glyph drawn is named (checkpoints, captures, skipped steps, +Inf marks), since nothing
    // else explains them; a plot of one line without marks needs no legend.
    int entries = 0;
    bool beyondTheLine = false;
    for (int i = 0; i < m_plot->graphCount(); ++i) {
        QCPGraph* graph = m_plot->graph(i);
        // A compared run's line keeps its entry while hidden, greyed, to be clicked back
        // (ComparedRunsOverlay): so does the plot's own line, run A's, then.
        const bool comparedRun = graph->property(kComparedRunProperty).toBool();
        const bool raw = graph == m_rawValues || graph == m_rawOverlay;
        const bool kept = comparedRun || graph == m_values;
        if (!raw && (graph->visible() || kept) && graph->dataCount() > 0 && !graph->name().isEmpty()) {
            graph->addToLegend();
            ++entries;
            beyondTheLine = beyondTheLine || graph != m_values;
        } else {
            graph->removeFromLegend();
        }
    }
    m_plot->legend->setVisible(entries > 1 && beyondTheLine);
}

QStringList SeriesPlot::legendNames() const
{
    QStringList names;
    if (!m_plot->legend->visible())
        return names;
    for (int i = 0; i < m_plot->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(m_plot->legend->item(i)))
            names << item->plottable()->name();
    return names;
}

void SeriesPlot::setCounts(bool counts)
{
    m_values->setLineStyle(counts ? QCPGraph::lsImpulse : QCPGraph::lsLine);
    m_values->setScatterStyle(counts ? QCPScatterStyle(QCPScatterStyle::ssDisc, 4) : QCPScatterStyle());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setTrendLine(const std::vector<double>& steps, const std::vector<double>& values)
{
    m_trend->setData(QVector<double>(steps.begin(), steps.end()), QVector<double>(values.begin(), values.end()));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int SeriesPlot::trendPointCount() const
{
    return m_trend->dataCount();
}

double SeriesPlot::trendValueAt(double step) const
{
    const auto* data = m_trend->data().data();
    if (data->isEmpty() || step < data->constBegin()->key || step > (data->constEnd() - 1)->key)
        return std::nan("");
    auto after = data->findBegin(step, false);
    if (after == data->constBegin())
        return after->value;
    if (after == data->constEnd())
        return (after - 1)->value;
    const auto before = after - 1;
    if (after->key == before->key)
        return after->value;
    const double t = (step - before->key) / (after->key - before->key);
    return before->value + t * (after->value - before->value);
}

void SeriesPlot::rescale(bool fitSteps)
{
    bool found = false;
    QCPRange keys = m_values->getKeyRange(found);
    for (QCPGraph* g : {m_overlay, m_nanMarkers, m_posInfMarkers, m_negInfMarkers}) {
        bool more = false;
        QCPRange r = g->getKeyRange(more);
        if (more)
            keys = found ? QCPRange(std::min(keys.lower, r.lower), std::max(keys.upper, r.upper)) : r;
        found = found || more;
    }
    if (found && fitSteps)
        setStepRange(keys.lower, std::max(keys.upper, keys.lower + 1));
    // The value axis spans the raw series too: smoothing must not push a spike off the plot.
    bool valuesFound = false;
    QCPRange values;
    for (QCPGraph* g : {m_values, m_overlay, m_rawValues, m_rawOverlay}) {
        bool found = false;
        const QCPRange r = g->getValueRange(found, QCP::sdBoth, QCPRange());
        if (found)
            values = valuesFound ? QCPRange(std::min(values.lower, r.lower), std::max(values.upper, r.upper)) : r;
        valuesFound = valuesFound || found;
    }
    if (valuesFound) {
        if (m_logScale) {
            values.lower = std::max(values.lower, 1e-300);
            m_plot->yAxis->setRange(values.lower / 2, values.upper * 2);
        } else {
            // A flat series (a constant learning rate) gets a band around its value; a margin
            // proportional to a zero span would label every tick with the same number.
            const double magnitude = std::max(std::fabs(values.lower), std::fabs(values.upper));
            const double span = values.upper - values.lower;
            const double margin = span > 1e-6 * magnitude ? span * 0.08 : (magnitude > 0 ? magnitude * 0.1 : 1.0);
            m_plot->yAxis->setRange(values.lower - margin, values.upper + margin);
        }
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::setStepAxis(std::shared_ptr<const StepAxis> axis)
{
    m_stepAxis = std::move(axis);
    m_plot->xAxis->setTicker(m_stepAxis ? QSharedPointer<QCPAxisTicker>(new StepAxisTicker(m_stepAxis))
                                        : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    if (m_hoverStep)
        showReadoutAt(*m_hoverStep);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace nanscope
