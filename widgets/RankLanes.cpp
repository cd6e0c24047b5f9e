#include "RankLanes.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>

namespace nanscope {

namespace {
constexpr int kLanePixels = 22;
const QColor kLogColour(120, 140, 170);
const QColor kNonfiniteColour(210, 30, 30);
} // namespace

RankLanes::RankLanes(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->yAxis->setRangeReversed(true);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->setToolTip(tr("A lane per rank: its logged steps, the step it went non-finite (red) and where it stopped; "
                          "click a lane to show that rank, double-click a step to select it"));
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        const int lane = int(std::lround(m_plot->yAxis->pixelToCoord(event->position().y())));
        if (lane >= 0 && lane < int(m_ranks.size()))
            emit rankClicked(m_ranks[size_t(lane)].rank);
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        emit stepClicked(qint64(std::llround(m_plot->xAxis->pixelToCoord(event->position().x()))));
    });
    setRanks({});
}

void RankLanes::setRanks(const std::vector<RankSummary>& ranks)
{
    m_ranks = ranks;
    std::sort(m_ranks.begin(), m_ranks.end(), [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
    m_plot->clearGraphs();
    m_plot->clearItems();
    m_texts.clear();
    std::optional<int64_t> first;
    for (const RankSummary& r : m_ranks)
        if (r.firstNonfiniteStep)
            first = first ? std::min(*first, *r.firstNonfiniteStep) : *r.firstNonfiniteStep;
    double lower = 0, upper = 1;
    bool any = false;
    QSharedPointer<QCPAxisTickerText> names(new QCPAxisTickerText);
    for (size_t lane = 0; lane < m_ranks.size(); ++lane) {
        const RankSummary& r = m_ranks[lane];
        names->addTick(double(lane), tr("rank %1").arg(r.rank));
        QString text = tr("rank %1: ").arg(r.rank);
        if (r.firstStep && r.lastStep) {
            QCPGraph* log = m_plot->addGraph();
            log->setPen(QPen(kLogColour, 4));
            log->setData({double(*r.firstStep), double(*r.lastStep)}, {double(lane), double(lane)});
            lower = any ? std::min(lower, double(*r.firstStep)) : double(*r.firstStep);
            upper = any ? std::max(upper, double(*r.lastStep)) : double(*r.lastStep);
            any = true;
        }
        if (r.firstNonfiniteStep) {
            const bool isFirst = first && *r.firstNonfiniteStep == *first;
            QCPGraph* tick = m_plot->addGraph();
            tick->setLineStyle(QCPGraph::lsNone);
            tick->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, kNonfiniteColour, kNonfiniteColour,
                                                  isFirst ? 13 : 9));
            tick->setData({double(*r.firstNonfiniteStep)}, {double(lane)});
            text += tr("non-finite from step %1").arg(*r.firstNonfiniteStep);
            if (isFirst)
                text += tr(" (first)");
            else if (first)
                text += tr(" (%1 after the first)").arg(*r.firstNonfiniteStep - *first);
        } else {
            text += tr("finite throughout");
        }
        if (r.end == RankEnd::Stopped || r.end == RankEnd::Lagging || r.end == RankEnd::Unreadable)
            text += QString("; %1").arg(QString::fromUtf8(toString(r.end)));
        if (r.end == RankEnd::Stopped && r.lastStep)
            text += tr(" at step %1").arg(*r.lastStep);
        auto* label = new QCPItemText(m_plot);
        label->setText(text);
        label->setPositionAlignment(Qt::AlignRight | Qt::AlignVCenter);
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(0.995, double(lane));
        label->setColor(r.firstNonfiniteStep ? kNonfiniteColour.darker(120) : palette().color(QPalette::WindowText));
        label->setBrush(QColor(255, 255, 255, 190));
        label->setSelectable(false);
        m_texts << text;
    }
    m_plot->yAxis->setTicker(names);
    m_plot->yAxis->setRange(-0.6, std::max<double>(0.6, double(m_ranks.size()) - 0.4));
    m_plot->xAxis->setRange(lower, std::max(upper, lower + 1));
    setMinimumHeight(std::min(240, 40 + kLanePixels * int(std::max<size_t>(1, m_ranks.size()))));
    setMaximumHeight(m_ranks.empty() ? 0 : 60 + kLanePixels * int(m_ranks.size()));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QStringList RankLanes::laneTexts() const
{
    return m_texts;
}

} // namespace nanscope
