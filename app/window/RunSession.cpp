#include "app/window/RunSession.h"

#include "core/open/RunScan.h"
#include "core/scan/RankScan.h"
#include "core/open/OpenRun.h"
#include "core/run/LayerNames.h"
#include "core/run/RunFolderFiles.h"
#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/run/SkippedSteps.h"

#include <QTimer>

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace rf = runformat;

namespace {

std::vector<double> toDouble(const std::vector<float>& values)
{
    return std::vector<double>(values.begin(), values.end());
}

// The wall-time and epoch axes, from the series the snapshot holds already (no second read).
void updateStepAxes(RunSnapshot& snapshot)
{
    snapshot.stepAxes = chooseStepAxes([&](const std::string& name) {
        std::vector<LoggedSeriesRef> found;
        if (auto it = snapshot.scalars.find(name); it != snapshot.scalars.end())
            found.push_back({rf::kScalars, snapshot.steps, it->second});
        for (const SeriesTable& table : snapshot.seriesTables)
            if (auto it = table.series.find(name); it != table.series.end())
                found.push_back({table.name, table.steps, it->second});
        return found;
    });
}

} // namespace

RunSession::RunSession(QObject* parent)
    : QObject(parent)
{
    static const bool registered = [] {
        qRegisterMetaType<RunSnapshot>();
        qRegisterMetaType<LayerDetail>();
        qRegisterMetaType<LayerHeatmap>();
        qRegisterMetaType<ScanReport>();
        qRegisterMetaType<std::vector<RankSummary>>();
        return true;
    }();
    (void)registered;
}

RunSession::~RunSession() = default;

ProgressCallback RunSession::progressCallback(const QString& what)
{
    return [this, what](double fraction, const std::string&) {
        emit progress(int(fraction * 100), what);
        return !m_cancelled.load();
    };
}

void RunSession::open(const QString& directory)
{
    m_cancelled = false;
    emit progress(0, tr("Opening %1").arg(directory));
    RunSnapshot snapshot;
    snapshot.directory = directory;
    auto reader = openRun(directory.toStdString(), progressCallback(tr("Reading %1").arg(directory)));
    if (!reader) {
        // The run shown before (if any) stays open and followed: a failed open changes nothing
        // but the message (the window keeps showing that run).
        snapshot.error = QString::fromStdString(reader.error());
        emit progress(100, QString());
        emit loaded(snapshot);
        if (!m_reader)
            announceRanks(); // none: nothing is shown
        return;
    }
    m_directory = directory;
    m_following = false;
    m_failedPolls = 0;
    m_wholeRunScan.reset();
    if (m_recomputeTimer)
        m_recomputeTimer->stop();
    m_reader = std::move(*reader);
    showFirstBadRank();
    snapshot = buildSnapshot();
    m_snapshot = snapshot;
    emit progress(100, QString());
    emit loaded(snapshot);
    announceRanks();
    // The heatmaps before the scan: they take a fraction of a second where the scan of a large or
    // multi-rank run takes many, and a rank switch asked for once the incidents are listed would
    // otherwise wait behind them on this thread.
    if (snapshot.error.isEmpty() && m_reader->rankSet())
        // The gradient norm: it shows the rank that went first; the non-finite count turns every
        // rank white together once the all-reduce has spread the NaN.
        requestRankHeatmap(int(HeatmapQuantity::GradNormLog10));
    if (snapshot.error.isEmpty() && !snapshot.layers.empty())
        requestHeatmap(int(defaultHeatmapQuantity(*m_reader)));
    if (snapshot.error.isEmpty())
        requestScan();
    if (!m_pollTimer) {
        m_pollTimer = new QTimer(this);
        m_pollTimer->setInterval(1000);
        connect(m_pollTimer, &QTimer::timeout, this, &RunSession::poll);
    }
    if (snapshot.error.isEmpty())
        m_pollTimer->start();
}

void RunSession::close()
{
    if (m_pollTimer)
        m_pollTimer->stop();
    if (m_recomputeTimer)
        m_recomputeTimer->stop();
    m_reader.reset();
    m_wholeRunScan.reset();
}

void RunSession::poll()
{
    if (!m_reader)
        return;
    auto refreshed = m_reader->refresh();
    if (!refreshed)
        return; // raced the writer's flush: the next poll reads again
    if (*refreshed) {
        m_lastGrowth = std::chrono::steady_clock::now();
        m_following = true;
    } else if (m_failedPolls == 0) {
        checkWriterGone();
        return;
    }
    // A read of rows the writer is still flushing can fail ("address of object past end of
    // allocation"): that poll is dropped whole and tried again, and only a failure that persists
    // for kFailedPollsBeforeReporting polls reaches the window.
    RunSnapshot next = grownSnapshot(m_snapshot);
    updateSeriesTables(next);
    updateStepAxes(next);
    updateTimelineEvents(next);
    const bool failed = !next.error.isEmpty() || next.warnings.size() > m_snapshot.warnings.size();
    if (failed && ++m_failedPolls < kFailedPollsBeforeReporting)
        return;
    m_failedPolls = 0;
    next.warnings.removeDuplicates();
    m_snapshot = std::move(next);
    emit grew(m_snapshot);
    // The scan and the heatmap read every row: while a run grows every second, run them at most
    // once per kRecomputeAfterGrowthMs, so a click on the session thread never waits behind a
    // queue of them.
    if (!m_recomputeTimer) {
        m_recomputeTimer = new QTimer(this);
        m_recomputeTimer->setSingleShot(true);
        m_recomputeTimer->setInterval(kRecomputeAfterGrowthMs);
        connect(m_recomputeTimer, &QTimer::timeout, this, [this] {
            if (!m_reader)
                return;
            requestScan();
            requestHeatmap(int(m_lastHeatmapQuantity));
        });
    }
    if (!m_recomputeTimer->isActive())
        m_recomputeTimer->start();
}

void RunSession::checkWriterGone()
{
    if (!m_following)
        return;
    const RunInfo& info = m_reader->info();
    const bool closed = info.openedForSwmr && !isMarkedOpenForWriting(info.logPath);
    const bool quiet = std::chrono::steady_clock::now() - m_lastGrowth > std::chrono::milliseconds(kQuietWriterMs);
    if (!closed && !quiet)
        return;
    m_following = false;
    emit followingEnded();
}

RunSnapshot RunSession::buildSnapshot()
{
    // A run read whole is an empty run of the same layout with every row appended: one reading
    // path for opening and for live follow.
    RunSnapshot empty;
    empty.directory = m_directory;
    const RunInfo& info = m_reader->info();
    if (const TableInfo* scalars = info.table(rf::kScalars))
        for (const auto& name : scalars->datasets)
            empty.scalars[name];
    if (const TableInfo* buffers = info.table(rf::kBuffers))
        for (const auto& name : buffers->names) {
            BatchNormSeries series;
            series.name = name;
            empty.batchNorm.push_back(std::move(series));
        }
    RunSnapshot snapshot = grownSnapshot(empty);
    for (const std::string& warning : info.source.warnings)
        snapshot.warnings << QString::fromStdString(warning);
    addWholeRunSeries(snapshot);
    return snapshot;
}

void RunSession::addWholeRunSeries(RunSnapshot& snapshot) const
{
    updateSeriesTables(snapshot);
    updateStepAxes(snapshot);
    updateTimelineEvents(snapshot);
    // Skipped steps that only the events record (DeepSpeed's overflow lines).
    const TableInfo* events = snapshot.info.table(rf::kEvents);
    if (!snapshot.scalars.count(runformat::scalar::kSkipped) && events && events->rows > 0) {
        auto kinds = m_reader->readStrings(rf::kEvents, rf::column::kKind);
        const auto& steps = m_reader->steps(rf::kEvents);
        if (kinds)
            snapshot.skippedSteps = runformat::skippedStepsOfEvents(*kinds, steps);
    }
}

void RunSession::updateTimelineEvents(RunSnapshot& snapshot) const
{
    const TableInfo* events = snapshot.info.table(rf::kEvents);
    if (!events || events->rows == snapshot.eventRows)
        return;
    auto kinds = m_reader->readStrings(rf::kEvents, rf::column::kKind);
    auto messages = m_reader->readStrings(rf::kEvents, rf::column::kMessage);
    if (!kinds || !messages) {
        snapshot.warnings << QString::fromStdString(!kinds ? kinds.error() : messages.error());
        return;
    }
    const auto& steps = m_reader->steps(rf::kEvents);
    snapshot.timelineEvents.clear();
    for (size_t i = 0; i < kinds->size() && i < messages->size() && i < steps.size(); ++i)
        if (isTimelineEventKind((*kinds)[i]))
            snapshot.timelineEvents.push_back({steps[i], (*kinds)[i], (*messages)[i]});
    snapshot.eventRows = events->rows;
}

void RunSession::updateSeriesTables(RunSnapshot& snapshot) const
{
    std::vector<SeriesTable> tables;
    for (const TableInfo& table : snapshot.info.tables) {
        if (table.name == rf::kScalars || !rf::isSeriesTableName(table.name) || !table.names.empty())
            continue;
        auto known = std::find_if(snapshot.seriesTables.begin(), snapshot.seriesTables.end(),
                                  [&](const SeriesTable& t) { return t.name == table.name; });
        // Rows are only ever appended: the same count is the same table, read already.
        if (known != snapshot.seriesTables.end() && int64_t(known->steps.size()) == table.rows) {
            tables.push_back(std::move(*known));
            continue;
        }
        SeriesTable series;
        series.name = table.name;
        series.steps = m_reader->steps(table.name);
        series.steps.resize(std::min(series.steps.size(), size_t(std::max<int64_t>(table.rows, 0))));
        for (const std::string& dataset : table.datasets) {
            auto values = m_reader->readSeries(table.name, dataset);
            if (!values) {
                snapshot.warnings << QString::fromStdString(values.error());
                continue;
            }
            values->resize(std::min(values->size(), series.steps.size())); // never padded with NaN
            series.series[dataset] = std::move(*values);
        }
        tables.push_back(std::move(series));
    }
    snapshot.seriesTables = std::move(tables);
}

RunSnapshot RunSession::grownSnapshot(const RunSnapshot& previous)
{
    // Only the rows appended since `previous` are read; anything else that changed (a new dataset,
    // other columns) is a new layout, read whole. NaN is data: a buffer dataset that cannot be read
    // is left short and named in the warnings, never filled with NaN.
    RunSnapshot snapshot = previous;
    snapshot.info = m_reader->info();
    const TableInfo* scalars = snapshot.info.table(rf::kScalars);
    const auto& steps = m_reader->steps(rf::kScalars);
    const int64_t oldRows = int64_t(previous.steps.size());
    const int64_t newRows = int64_t(steps.size());
    if (!scalars) { // a folder of checkpoints alone: no training scalars to plot, but its layers
        if (const TableInfo* layers = snapshot.info.table(rf::kLayers))
            snapshot.layers = layers->names;
        return snapshot;
    }
    if (newRows < oldRows || scalars->datasets.size() != previous.scalars.size())
        return buildSnapshot();
    for (const auto& name : scalars->datasets) {
        auto it = snapshot.scalars.find(name);
        if (it == snapshot.scalars.end() || int64_t(it->second.size()) != oldRows)
            return buildSnapshot();
        auto rows = m_reader->readSeriesRows(rf::kScalars, name, oldRows, newRows - oldRows);
        if (!rows) {
            snapshot.error = QString::fromStdString(rows.error());
            return snapshot;
        }
        it->second.insert(it->second.end(), rows->begin(), rows->end());
    }
    snapshot.steps = steps;
    if (auto it = snapshot.scalars.find(runformat::scalar::kSkipped); it != snapshot.scalars.end())
        for (int64_t i = oldRows; i < newRows; ++i)
            if (runformat::isSkippedValue(it->second[size_t(i)]))
                snapshot.skippedSteps.push_back(snapshot.steps[size_t(i)]);
    if (const TableInfo* layers = snapshot.info.table(rf::kLayers))
        snapshot.layers = layers->names;
    if (const TableInfo* buffers = snapshot.info.table(rf::kBuffers)) {
        if (buffers->names.size() != previous.batchNorm.size())
            return buildSnapshot();
        const auto& bufferSteps = m_reader->steps(rf::kBuffers);
        const int64_t before = previous.batchNorm.empty() ? 0 : int64_t(previous.batchNorm.front().steps.size());
        const int64_t after = int64_t(bufferSteps.size());
        if (after < before)
            return buildSnapshot();
        const size_t width = buffers->names.size();
        auto append = [&](const char* dataset, std::vector<double> BatchNormSeries::*member) {
            auto block = m_reader->readBlock(rf::kBuffers, dataset, before, after - before);
            if (!block) {
                snapshot.warnings << QString::fromStdString(block.error());
                return;
            }
            for (size_t c = 0; c < width; ++c)
                for (int64_t r = 0; r < after - before; ++r)
                    (snapshot.batchNorm[c].*member).push_back(double((*block)[size_t(r) * width + c]));
        };
        append(rf::column::kRunningMeanMin, &BatchNormSeries::meanMin);
        append(rf::column::kRunningMeanMax, &BatchNormSeries::meanMax);
        append(rf::column::kRunningVarMin, &BatchNormSeries::varMin);
        append(rf::column::kRunningVarMax, &BatchNormSeries::varMax);
        append(rf::column::kNonfinite, &BatchNormSeries::nonfinite);
        for (auto& series : snapshot.batchNorm)
            series.steps = bufferSteps;
    }
    return snapshot;
}

void RunSession::requestLayerDetail(const QString& layer)
{
    LayerDetail detail;
    detail.layer = layer;
    if (!m_reader) {
        detail.error = tr("No run is open");
        emit layerDetailReady(detail);
        return;
    }
    const TableInfo* layers = m_reader->table(rf::kLayers);
    const std::string name = layer.toStdString();
    if (layers) {
        auto it = std::find(layers->names.begin(), layers->names.end(), name);
        if (it != layers->names.end()) {
            const int64_t column = it - layers->names.begin();
            detail.steps = m_reader->steps(rf::kLayers);
            for (auto [dataset, target] : {std::pair{rf::column::kGradNorm, &detail.gradNorm},
                                           std::pair{rf::column::kParamNorm, &detail.paramNorm},
                                           std::pair{rf::column::kGradNonfinite, &detail.gradNonfinite}}) {
                if (std::count(layers->datasets.begin(), layers->datasets.end(), dataset))
                    if (auto values = m_reader->readColumn(rf::kLayers, dataset, column))
                        *target = toDouble(*values);
            }
        }
    }
    // The module that owns the parameter: "encoder.0.weight" -> "encoder.0". A name that is
    // itself a module path (clicked in the heatmap of activations) is taken as it is.
    if (const TableInfo* activations = m_reader->table(rf::kActivations)) {
        const int64_t column = layernames::moduleColumn(activations->names, name);
        if (column >= 0) {
            detail.module = QString::fromStdString(activations->names[size_t(column)]);
            detail.activationSteps = m_reader->steps(rf::kActivations);
            for (auto [dataset, target] : {std::pair{"min", &detail.activationMin}, std::pair{"max", &detail.activationMax},
                                           std::pair{"mean", &detail.activationMean}, std::pair{"std", &detail.activationStd},
                                           std::pair{"nan", &detail.activationNan}, std::pair{"inf", &detail.activationInf}})
                if (auto values = m_reader->readColumn(rf::kActivations, dataset, column))
                    *target = toDouble(*values);
        }
    }
    emit layerDetailReady(detail);
}

void RunSession::requestHeatmap(int quantity)
{
    if (!m_reader)
        return;
    m_cancelled = false;
    m_lastHeatmapQuantity = HeatmapQuantity(quantity);
    auto heatmap = buildLayerHeatmap(*m_reader, HeatmapQuantity(quantity), size_t(m_heatmapBins),
                                     progressCallback(tr("Building heatmap")));
    emit progress(100, QString());
    if (heatmap)
        emit heatmapReady(*heatmap);
    else // a damaged chunk, say: the window says so instead of waiting for a heatmap forever
        emit heatmapFailed(QString::fromStdString(heatmap.error()));
}

} // namespace nanscope

namespace nanscope {

void RunSession::requestScan()
{
    if (!m_reader)
        return;
    m_cancelled = false;
    // A multi-rank run: every rank's incidents and the ranks' together (each names its rank).
    auto report = scanRun(*m_reader, m_scanConfig,
                          progressCallback(m_reader->rankSet() ? tr("Scanning every rank")
                                                               : tr("Scanning for incidents")));
    emit progress(100, QString());
    if (report) {
        m_wholeRunScan = report->report;
        emit scanned(report->report);
        emit ranksScanned(report->ranks ? report->ranks->ranks : std::vector<RankSummary>{});
    } else {
        emit scanFailed(QString::fromStdString(report.error()));
    }
}

} // namespace nanscope
