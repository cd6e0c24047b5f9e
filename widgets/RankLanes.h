#pragma once

// A lane per rank of a multi-rank run, steps across: where each rank's log runs, the step it first
// went non-finite (a red tick, the first rank's named "first"), and where a rank stopped. A ranks
// heatmap shows a rank that went first by one step as a one-pixel sliver; the lanes say which rank
// went first and when, at a glance.

#include "core/scan/RankScan.h"

#include <QMetaType>
#include <QWidget>

#include <vector>

class QCustomPlot;

namespace nanscope {

class RankLanes : public QWidget
{
    Q_OBJECT
public:
    explicit RankLanes(QWidget* parent = nullptr);

    void setRanks(const std::vector<RankSummary>& ranks);
    void clear() { setRanks({}); }
    // One line per rank, as the lanes' labels say it: "rank 2: non-finite from step 141 (first)".
    QStringList laneTexts() const;
    QCustomPlot* plot() const { return m_plot; }

signals:
    void rankClicked(int rank);
    void stepClicked(qint64 step);

private:
    QCustomPlot* m_plot = nullptr;
    std::vector<RankSummary> m_ranks;
    QStringList m_texts;
};

} // namespace nanscope

Q_DECLARE_METATYPE(std::vector<nanscope::RankSummary>)
