#include "app/window/RankControls.h"

#include "widgets/RunContext.h"
#include "app/window/RunSession.h"

#include "core/run/RankHeatmap.h"
#include "widgets/HeatmapView.h"
#include "widgets/RankLanes.h"

#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMainWindow>
#include <QToolBar>
#include <QVBoxLayout>

namespace nanscope {

RankControls::RankControls(QMainWindow* window, RunSession* session, RunContext* context)
    : QObject(window)
    , m_toolBar(new QToolBar(tr("Rank"), window))
    , m_selector(new QComboBox(window))
    , m_dock(new QDockWidget(tr("Ranks"), window))
    , m_heatmap(new HeatmapView(window))
    , m_lanes(new RankLanes(window))
{
    m_toolBar->setObjectName("rankToolBar");
    m_toolBar->addWidget(new QLabel(tr(" Rank: "), m_toolBar));
    m_selector->setToolTip(tr("Which rank's run the views show; the scan covers every rank"));
    m_selector->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_toolBar->addWidget(m_selector);
    window->addToolBar(m_toolBar);
    m_toolBar->setVisible(false);

    m_dock->setObjectName("rankDock");
    m_heatmap->setToolTip(tr("Ranks x steps: click a rank to show it, double-click a step to select it"));
    // Which rank went first, and when, above the ranks x steps heatmap.
    auto* panel = new QWidget(m_dock);
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_lanes);
    layout->addWidget(m_heatmap, 1);
    m_dock->setWidget(panel);
    window->addDockWidget(Qt::BottomDockWidgetArea, m_dock);
    m_dock->setVisible(false);

    connect(m_selector, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { emit rankRequested(m_selector->itemData(index).toInt()); });
    connect(m_heatmap, &HeatmapView::layerClicked, this, &RankControls::requestRankOfRow);
    connect(m_heatmap, &HeatmapView::stepClicked, context, &RunContext::selectStep);
    connect(m_heatmap, &HeatmapView::quantityRequested, this, &RankControls::rankHeatmapRequested);
    connect(m_lanes, &RankLanes::rankClicked, this, &RankControls::showRank);
    connect(m_lanes, &RankLanes::stepClicked, context, &RunContext::selectStep);
    connect(session, &RunSession::ranksScanned, m_lanes, &RankLanes::setRanks);
    connect(context, &RunContext::stepSelected, m_heatmap, [this](qint64 step) { m_heatmap->setSelectedStep(step); });

    // The session lives on its own thread: these cross by queued connection.
    connect(this, &RankControls::rankRequested, session, &RunSession::selectRank);
    connect(this, &RankControls::rankHeatmapRequested, session, &RunSession::requestRankHeatmap);
    connect(session, &RunSession::ranksFound, this, &RankControls::showRanks);
    connect(session, &RunSession::rankHeatmapReady, m_heatmap, &HeatmapView::setHeatmap);
}

void RankControls::showRanks(const QStringList& ranks, int shown)
{
    m_shownRank = shown;
    m_selector->clear();
    for (const QString& row : ranks)
        m_selector->addItem(row, rankOfRowName(row.toStdString()));
    m_selector->setCurrentIndex(m_selector->findData(shown));
    const bool multiRank = !ranks.isEmpty();
    m_toolBar->setVisible(multiRank);
    m_dock->setVisible(multiRank);
    if (!multiRank) {
        m_heatmap->clear();
        m_lanes->clear();
    }
}

void RankControls::showRank(int rank)
{
    const int row = m_selector->findData(rank);
    if (row < 0 || row == m_selector->currentIndex())
        return;
    m_selector->setCurrentIndex(row);
    emit rankRequested(rank);
}

void RankControls::requestRankOfRow(const QString& row)
{
    const int rank = rankOfRowName(row.toStdString());
    if (rank >= 0)
        emit rankRequested(rank);
}

} // namespace nanscope
