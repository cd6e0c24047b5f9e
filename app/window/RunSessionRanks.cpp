// RunSession's multi-rank part: which rank the views show, and the rank x step heatmap. On the
// session thread, like every read of the run.
#include "app/window/RunSession.h"

#include "core/run/RankHeatmap.h"
#include "core/run/RankSet.h"
#include "core/scan/RankScan.h"

namespace nanscope {

void RunSession::showFirstBadRank()
{
    RankSet* ranks = m_reader ? m_reader->rankSet() : nullptr;
    if (!ranks)
        return;
    const auto series = scan::loadRankFirstNonfinite(*ranks);
    const scan::NonfiniteLeaders found = scan::findNonfiniteLeaders(series);
    if (!found.leaders.empty())
        (void)ranks->selectRank(found.leaders.front()->rank); // a leader has a readable run
}

void RunSession::announceRanks()
{
    const RankSet* ranks = m_reader ? m_reader->rankSet() : nullptr;
    QStringList names;
    if (ranks)
        for (const RankMember& member : ranks->members())
            names << QString::fromStdString(rankRowName(member.rank));
    emit ranksFound(names, ranks ? ranks->selectedRank() : -1);
}

void RunSession::selectRank(int rank)
{
    RankSet* ranks = m_reader ? m_reader->rankSet() : nullptr;
    if (!ranks || rank == ranks->selectedRank())
        return;
    if (Status s = ranks->selectRank(rank); !s) {
        emit scanFailed(QString::fromStdString(s.error()));
        return;
    }
    // The views start over on the other rank's run, as on an open; the scan covers every rank.
    m_snapshot = buildSnapshot();
    emit loaded(m_snapshot);
    announceRanks();
    if (m_wholeRunScan)
        emit scanned(*m_wholeRunScan);
    else
        requestScan();
    if (!m_snapshot.layers.empty())
        requestHeatmap(int(m_lastHeatmapQuantity));
}

void RunSession::requestRankHeatmap(int quantity)
{
    const RankSet* ranks = m_reader ? m_reader->rankSet() : nullptr;
    if (!ranks)
        return;
    auto heatmap = buildRankHeatmap(*ranks, HeatmapQuantity(quantity), size_t(m_heatmapBins));
    if (heatmap)
        emit rankHeatmapReady(*heatmap);
    else
        emit heatmapFailed(QString::fromStdString(heatmap.error()));
}

} // namespace nanscope
