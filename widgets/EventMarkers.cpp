#include "EventMarkers.h"

#include "SeriesPlot.h"
#include "core/run/RunFormat.h"

#include <qcustomplot.h>

#include <QToolTip>

#include <cmath>

namespace nanscope {

namespace event = runformat::event;

namespace {

struct MarkStyle
{
    const char* kind;
    const char* label;
    QCPScatterStyle::ScatterShape shape;
    QColor colour;
};

// Near the top of the hidden [0, 1] marker axis, below the NaN and +Inf rows.
constexpr double kEventRow = 0.9;
// Pixels either side of a line within which hovering shows its message.
constexpr double kHoverPixels = 5;

const std::vector<MarkStyle>& styles()
{
    static const std::vector<MarkStyle> all{
        {event::kRollback, QT_TRANSLATE_NOOP("EventMarkers", "rollback"), QCPScatterStyle::ssSquare, QColor(200, 30, 120)},
        {event::kBuffersRestored, QT_TRANSLATE_NOOP("EventMarkers", "buffers restored"), QCPScatterStyle::ssCircle,
         QColor(30, 140, 60)},
        {event::kIncidentCapture, QT_TRANSLATE_NOOP("EventMarkers", "incident capture"), QCPScatterStyle::ssPlus,
         QColor(90, 60, 200)},
    };
    return all;
}

const MarkStyle* styleOf(const std::string& kind)
{
    for (const MarkStyle& style : styles())
        if (kind == style.kind)
            return &style;
    return nullptr;
}

} // namespace

bool isTimelineEventKind(const std::string& kind)
{
    return styleOf(kind) != nullptr;
}

EventMarkers::EventMarkers(SeriesPlot* plot)
    : QObject(plot)
    , m_plot(plot)
{
    QCustomPlot* custom = plot->plot();
    for (const MarkStyle& style : styles()) {
        QCPGraph* graph = custom->addGraph(custom->xAxis, custom->yAxis2);
        graph->setName(tr(style.label));
        graph->setLineStyle(QCPGraph::lsNone);
        graph->setScatterStyle(QCPScatterStyle(style.shape, style.colour, style.colour, 9));
        graph->setPen(QPen(style.colour));
        graph->removeFromLegend();
        m_symbols[style.kind] = graph;
    }
    connect(custom, &QCustomPlot::mouseMove, this, [this, custom](QMouseEvent* mouse) {
        if (m_events.empty())
            return;
        const double x = mouse->position().x();
        const double step = custom->xAxis->pixelToCoord(x);
        const double tolerance = std::abs(custom->xAxis->pixelToCoord(x + kHoverPixels) - step);
        const QString text = textNear(step, tolerance);
        if (!text.isEmpty())
            QToolTip::showText(mouse->globalPosition().toPoint(), text, custom,
                               QRect(mouse->position().toPoint() - QPoint(int(kHoverPixels), 200),
                                     QSize(2 * int(kHoverPixels), 400)));
    });
}

void EventMarkers::setEvents(const std::vector<TimelineEvent>& events)
{
    QCustomPlot* custom = m_plot->plot();
    for (QCPItemStraightLine* line : m_lines)
        custom->removeItem(line);
    m_lines.clear();
    m_events.clear();
    std::map<std::string, QVector<double>> steps;
    for (const TimelineEvent& e : events) {
        const MarkStyle* style = styleOf(e.kind);
        if (!style)
            continue;
        m_events.push_back(e);
        steps[e.kind] << double(e.step);
        auto* line = new QCPItemStraightLine(custom);
        line->setPen(QPen(style->colour, 1, Qt::DashLine));
        line->point1->setCoords(double(e.step), 0);
        line->point2->setCoords(double(e.step), 1);
        line->point1->setAxes(custom->xAxis, custom->yAxis2);
        line->point2->setAxes(custom->xAxis, custom->yAxis2);
        line->setSelectable(false);
        m_lines.push_back(line);
    }
    for (const auto& [kind, graph] : m_symbols) {
        const QVector<double> x = steps[kind];
        graph->setData(x, QVector<double>(x.size(), kEventRow), true);
    }
    custom->replot(QCustomPlot::rpQueuedReplot);
}

int EventMarkers::markedCount(const std::string& kind) const
{
    auto it = m_symbols.find(kind);
    return it == m_symbols.end() ? 0 : it->second->dataCount();
}

QString EventMarkers::textNear(double step, double tolerance) const
{
    QStringList lines;
    for (const TimelineEvent& e : m_events)
        if (std::abs(double(e.step) - step) <= tolerance)
            lines << tr("%1 at step %2: %3")
                         .arg(tr(styleOf(e.kind)->label))
                         .arg(e.step)
                         .arg(QString::fromStdString(e.message));
    return lines.join("\n");
}

} // namespace nanscope
