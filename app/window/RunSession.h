#pragma once

#include "widgets/RankLanes.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"
#include "core/run/LayerHeatmap.h"
#include "core/run/RunSource.h"
#include "core/run/StepAxis.h"
#include "widgets/RunSnapshot.h"
#include "widgets/ViewData.h"

#include <QObject>
#include <QStringList>
#include <QString>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

class QTimer;

namespace nanscope {

// Owns the run's source (RunSource) on a thread of its own: HDF5 is not safe to call from several threads, so
// every read of the open run is funnelled through here, as RenderDoc funnels its replay calls.
// Requests are queued slots; results come back as signals carrying values.
class RunSession : public QObject
{
    Q_OBJECT
public:
    explicit RunSession(QObject* parent = nullptr);
    ~RunSession() override;

    // The settings its scans use; call on the session's thread (before open, or the next scan).
    void setScanConfig(const ScanConfig& config) { m_scanConfig = config; }
    // Thread-safe: asks the work in progress to stop.
    void cancel() { m_cancelled = true; }

public slots:
    void open(const QString& directory);
    void close();
    void requestLayerDetail(const QString& layer);
    void requestHeatmap(int quantity);
    void requestScan();
    // Live follow: rereads what grew since the last look. Started by open().
    void poll();
    // Multi-rank runs (RunSessionRanks.cpp): show another rank, and the rank x step heatmap.
    void selectRank(int rank);
    void requestRankHeatmap(int quantity);

signals:
    void loaded(const nanscope::RunSnapshot& snapshot);
    void grew(const nanscope::RunSnapshot& snapshot);
    void progress(int percent, const QString& what);
    void layerDetailReady(const nanscope::LayerDetail& detail);
    void heatmapReady(const nanscope::LayerHeatmap& heatmap);
    void scanned(const nanscope::ScanReport& report);
    // A multi-rank run's scan: each rank's span, first non-finite step and end (the rank lanes).
    void ranksScanned(const std::vector<nanscope::RankSummary>& ranks);
    // The scan or the heatmap could not be made (a damaged chunk of run.h5): why, naming the file.
    void scanFailed(const QString& error);
    void heatmapFailed(const QString& error);
    // After every open and rank switch: the ranks' row names ("rank 0", ...; empty for a single
    // process) and the rank shown.
    void ranksFound(const QStringList& ranks, int shown);
    void rankHeatmapReady(const nanscope::LayerHeatmap& heatmap);
    // Live follow ended: the writer closed the run (a finished training), or wrote nothing for
    // kQuietWriterMs (a writer killed or stopped). Growth afterwards starts following again.
    void followingEnded();

private:
    RunSnapshot buildSnapshot();
    // `previous` with the rows appended since it was read.
    RunSnapshot grownSnapshot(const RunSnapshot& previous);
    // What only a whole read gives: series of other logging rates, skipped steps from events.
    void addWholeRunSeries(RunSnapshot& snapshot) const;
    // Rereads each table of series at another logging rate whose rows changed (all on open).
    void updateSeriesTables(RunSnapshot& snapshot) const;
    // Rereads the timeline's events when /events grew (all on open).
    void updateTimelineEvents(RunSnapshot& snapshot) const;
    ProgressCallback progressCallback(const QString& what);
    // On open of a multi-rank run: shows the first rank to go non-finite, and says which ranks there are.
    void showFirstBadRank();
    void announceRanks();

    std::unique_ptr<RunSource> m_reader;
    QString m_directory;
    RunSnapshot m_snapshot; // what the window was last given, for live follow to append to
    QTimer* m_pollTimer = nullptr;
    QTimer* m_recomputeTimer = nullptr; // the scan and heatmap after growth, throttled
    static constexpr int kRecomputeAfterGrowthMs = 3000;
    // A read that races the writer's flush fails now and then; it is retried on the next polls
    // and reported only when it fails this many polls in a row.
    static constexpr int kFailedPollsBeforeReporting = 5;
    static constexpr int kQuietWriterMs = 30000;
    int m_failedPolls = 0;
    bool m_following = false;
    std::chrono::steady_clock::time_point m_lastGrowth;
    // Ends live follow when the writer has gone (see followingEnded).
    void checkWriterGone();
    std::atomic<bool> m_cancelled{false};
    int m_heatmapBins = 1200;
    HeatmapQuantity m_lastHeatmapQuantity = HeatmapQuantity::GradNormLog10;
    // The last scan of the whole run. It covers every rank, so a rank switch shows it again
    // rather than scanning every rank once more.
    std::optional<ScanReport> m_wholeRunScan;
    ScanConfig m_scanConfig;
};

} // namespace nanscope

Q_DECLARE_METATYPE(nanscope::LayerDetail)
Q_DECLARE_METATYPE(nanscope::LayerHeatmap)
Q_DECLARE_METATYPE(nanscope::ScanReport)
