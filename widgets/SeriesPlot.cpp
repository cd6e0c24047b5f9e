#include "SeriesPlot.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <cmath>

namespace nanscope {

namespace {
// Marker rows on the hidden right axis, which always spans [0, 1]: edges of the plot.
constexpr double kNanRow = 0.96;
constexpr double kPosInfRow = 0.99;
constexpr double kNegInfRow = 0.01;

QCPGraph* addMarkerGraph(QCustomPlot* plot, const QString& name, QCPScatterStyle::ScatterShape shape, QColor colour)
{
    QCPGraph* graph = plot->addGraph(plot->xAxis, plot->yAxis2);
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(shape, colour, colour, 9));
    graph->setPen(QPen(colour));
    return graph;
}
} // namespace

SeriesPlot::SeriesPlot(const QString& title, QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumHeight(140);

    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->yAxis->setLabel(title);
    m_plot->xAxis->setLabel("step");
    m_plot->yAxis2->setRange(0, 1);
    m_plot->yAxis2->setVisible(false);

    m_values = m_plot->addGraph();
    m_values->setName(title);
    m_values->setPen(QPen(palette().color(QPalette::Highlight), 1.5));
    m_values->setAdaptiveSampling(true);
    m_nanMarkers = addMarkerGraph(m_plot, "NaN", QCPScatterStyle::ssCross, QColor(220, 30, 30));
    m_posInfMarkers = addMarkerGraph(m_plot, "+Inf", QCPScatterStyle::ssTriangle, QColor(230, 120, 0));
    m_negInfMarkers = addMarkerGraph(m_plot, "-Inf", QCPScatterStyle::ssTriangleInverted, QColor(140, 60, 200));

    m_stepCursor = new QCPItemStraightLine(m_plot);
    m_stepCursor->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
    m_stepCursor->setVisible(false);

    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        if (event->button() == Qt::LeftButton && event->modifiers() & Qt::ControlModifier)
            emit stepClicked(qint64(std::llround(m_plot->xAxis->pixelToCoord(event->position().x()))));
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        emit stepClicked(qint64(std::llround(m_plot->xAxis->pixelToCoord(event->position().x()))));
    });
}

void SeriesPlot::setSeries(const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    QVector<double> x, y, nanX, posX, negX;
    x.reserve(int(steps.size()));
    y.reserve(int(steps.size()));
    const size_t n = std::min(steps.size(), values.size());
    for (size_t i = 0; i < n; ++i) {
        const double v = values[i];
        const double s = double(steps[i]);
        if (std::isnan(v)) {
            nanX << s;
        } else if (std::isinf(v)) {
            (v > 0 ? posX : negX) << s;
        } else if (m_logScale && v <= 0) {
            continue; // not representable on a log axis; still counted as data below
        } else {
            x << s;
            y << v;
            continue;
        }
        // A gap in the line where the value is not finite, so no segment pretends otherwise.
        x << s;
        y << std::numeric_limits<double>::quiet_NaN();
    }
    m_nanCount = nanX.size();
    m_posInfCount = posX.size();
    m_negInfCount = negX.size();
    m_values->setData(x, y, true);
    m_nanMarkers->setData(nanX, QVector<double>(nanX.size(), kNanRow), true);
    m_posInfMarkers->setData(posX, QVector<double>(posX.size(), kPosInfRow), true);
    m_negInfMarkers->setData(negX, QVector<double>(negX.size(), kNegInfRow), true);
    rescale();
}

void SeriesPlot::setLogScale(bool logScale)
{
    m_logScale = logScale;
    m_plot->yAxis->setScaleType(logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_plot->yAxis->setTicker(logScale ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog)
                                      : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    rescale();
}

void SeriesPlot::setSelectedStep(int64_t step)
{
    m_stepCursor->point1->setCoords(double(step), 0);
    m_stepCursor->point2->setCoords(double(step), 1);
    m_stepCursor->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SeriesPlot::rescale()
{
    m_values->rescaleAxes();
    bool found = false;
    QCPRange keys = m_values->getKeyRange(found);
    for (QCPGraph* g : {m_nanMarkers, m_posInfMarkers, m_negInfMarkers}) {
        bool markerFound = false;
        QCPRange r = g->getKeyRange(markerFound);
        if (markerFound)
            keys = found ? QCPRange(std::min(keys.lower, r.lower), std::max(keys.upper, r.upper)) : r;
        found = found || markerFound;
    }
    if (found)
        m_plot->xAxis->setRange(keys.lower, std::max(keys.upper, keys.lower + 1));
    m_plot->yAxis->scaleRange(1.1, m_plot->yAxis->range().center());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace nanscope
