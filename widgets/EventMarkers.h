#pragma once

// What the training's defences did, marked on a plot of the timeline: a thin vertical line and a
// symbol at the top for each rollback, BatchNorm buffers restored and incident capture (skipped
// steps keep their own marker at the foot, SeriesPlot::setMarkedSteps). Hovering near a line
// shows the event's message.

#include <QObject>
#include <QString>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

class QCPGraph;
class QCPItemStraightLine;

namespace nanscope {

class SeriesPlot;

// One /events row shown on the timeline.
struct TimelineEvent
{
    int64_t step = 0;
    std::string kind;    // a runformat::event kind
    std::string message;
};

// The /events kinds the timeline marks (rollback, buffers_restored, incident_capture).
bool isTimelineEventKind(const std::string& kind);

class EventMarkers : public QObject
{
    Q_OBJECT
public:
    // Adds its graphs to `plot`, which owns them (and this, as a QObject child).
    explicit EventMarkers(SeriesPlot* plot);

    void setEvents(const std::vector<TimelineEvent>& events);
    void clear() { setEvents({}); }

    int markedCount(const std::string& kind) const;
    // The tooltip for the cursor at `step` (events within `tolerance` steps): "rollback at step
    // 40: ..." one line per event; empty when none is near.
    QString textNear(double step, double tolerance) const;

private:
    SeriesPlot* m_plot;
    std::map<std::string, QCPGraph*> m_symbols; // by kind
    std::vector<QCPItemStraightLine*> m_lines;
    std::vector<TimelineEvent> m_events;
};

} // namespace nanscope
