// The incident report's content, gathered once: the run and its scan, the plots, and each
// critical incident's replay and triage (in child processes).
#include "app/report/IncidentReportContent.h"
#include "core/run/MeasuredCell.h"

#include "app/report/ComparisonReport.h"
#include "app/children/ReplayProcess.h"
#include "app/codecs/TriageJson.h"

#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"
#include "core/open/OpenRun.h"
#include "core/open/RunScan.h"
#include "core/tensor/BatchNormHealth.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QDateTime>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <optional>

namespace nanscope::report {

namespace {
namespace rf = runformat;

// `dataset`: the /scalars dataset the plot shows ("loss"), or a series of another table by its
// evidence name ("buffers/nonfinite"): the incidents measured on it get their trend line.
QImage renderPlot(const QString& title, const std::string& dataset, const std::vector<int64_t>& steps,
                  const std::vector<double>& values, const std::vector<Incident>& incidents, bool logScale,
                  double from, double to)
{
    SeriesPlot plot(title);
    plot.resize(1000, 320);
    plot.setLogScale(logScale);
    plot.setSeries(steps, values);
    // A printed plot has no readout to hover: its axes say what they show.
    plot.plot()->xAxis->setLabel(QObject::tr("step"));
    plot.plot()->yAxis->setLabel(plot.logScale() ? QObject::tr("%1 (log scale)").arg(title) : title);
    markIncidents(plot, incidents, true, QString::fromStdString(dataset.find('/') == std::string::npos
                                                                    ? rf::scalarSeries(dataset)
                                                                    : dataset));
    if (to > from)
        plot.setStepRange(from, to);
    return plot.plot()->toPixmap(1000, 300).toImage();
}

// The series an incident was measured in, when it is not the run's loss or gradient norm, with the
// plot's title: a normalisation layer's /buffers column (a BatchNorm incident: its gradient norm
// looks healthy), the output range of the module a blow-up began in (its largest |x|), a
// parameter's /layers column, another logged scalar (a precursor): the quantity the incident was
// measured in, never the gradient norm under another name. Empty when not logged.
struct EvidenceSeries
{
    QString title;
    std::vector<int64_t> steps;
    std::vector<double> values;
    bool logScale = true;
};

std::optional<EvidenceSeries> evidenceSeries(const RunSource& reader, const Incident& incident)
{
    const std::string& evidence = incident.evidence.series;
    const size_t slash = evidence.find('/');
    if (slash == std::string::npos)
        return std::nullopt;
    const std::string table = evidence.substr(0, slash);
    std::string column = evidence.substr(slash + 1), dataset;
    if (table == rf::kBuffers) {
        if (incident.layers.empty())
            return std::nullopt;
        dataset = column;
        column = incident.layers.front();
    } else if (table == rf::kLayers) {
        const size_t split = column.find('/');
        if (split == std::string::npos)
            return std::nullopt;
        dataset = column.substr(0, split);
        column = column.substr(split + 1);
    } else if (table == rf::kScalars) {
        if (column == rf::scalar::kLoss || column == rf::scalar::kGradNorm)
            return std::nullopt;
        auto values = reader.readSeries(rf::kScalars, column);
        if (!values || values->empty())
            return std::nullopt;
        std::vector<int64_t> steps = reader.steps(rf::kScalars);
        steps.resize(std::min(steps.size(), values->size()));
        values->resize(steps.size());
        return EvidenceSeries{QString::fromStdString(column), std::move(steps), std::move(*values), true};
    } else if (table != rf::kActivations) {
        return std::nullopt;
    }
    const TableInfo* info = reader.table(table);
    if (!info)
        return std::nullopt;
    const auto found = std::find(info->names.begin(), info->names.end(), column);
    if (found == info->names.end())
        return std::nullopt;
    const int64_t index = int64_t(found - info->names.begin());
    EvidenceSeries series;
    series.steps = reader.steps(table);
    if (table == rf::kActivations) {
        // Its largest |x|, as the scan measured it; a row with no element measured (the module did
        // not run) is left out, one whose output went non-finite is NaN.
        auto lows = reader.readColumn(table, rf::column::kMin, index);
        auto highs = reader.readColumn(table, rf::column::kMax, index);
        auto nans = reader.readColumn(table, rf::column::kNan, index);
        auto infs = reader.readColumn(table, rf::column::kInf, index);
        if (!lows || !highs)
            return std::nullopt;
        std::vector<int64_t> steps;
        for (size_t r = 0; r < series.steps.size() && r < lows->size() && r < highs->size(); ++r) {
            const double magnitude = largestMagnitude((*lows)[r], (*highs)[r]);
            const double nan = nans && r < nans->size() ? (*nans)[r] : 0.0;
            const double inf = infs && r < infs->size() ? (*infs)[r] : 0.0;
            if (noElementMeasured(magnitude, nan, inf))
                continue;
            steps.push_back(series.steps[r]);
            series.values.push_back(magnitude);
        }
        series.steps = std::move(steps);
        series.title = QObject::tr("%1 output, largest |x|").arg(QString::fromStdString(column));
        return series;
    }
    auto values = reader.readColumn(table, dataset, index);
    if (!values)
        return std::nullopt;
    series.steps.resize(std::min(series.steps.size(), values->size()));
    series.values.assign(values->begin(), values->begin() + std::ptrdiff_t(series.steps.size()));
    series.title = QString::fromStdString(column + " " + dataset);
    series.logScale = dataset != rf::column::kNonfinite;
    return series;
}

// An incident's plot: the series it was measured in (evidenceSeries), else the loss (a divergence,
// or a run without a gradient norm) or the gradient norm, over the incident's view range.
Plot incidentPlot(const RunSource& reader, const Incident& incident, const QString& file, const StepRange& range,
                  const std::vector<int64_t>& steps, const std::vector<double>& loss,
                  const std::vector<double>& gradNorm)
{
    const QString caption = QObject::tr("%1 at step %2").arg(toString(incident.kind)).arg(incident.onsetStep);
    const auto measured = evidenceSeries(reader, incident);
    if (measured && !measured->steps.empty())
        return {file, caption + ": " + measured->title,
                renderPlot(measured->title, incident.evidence.series, measured->steps, measured->values, {incident},
                           measured->logScale, range.first, range.last)};
    const bool onLoss = gradNorm.empty() ||
                        (incident.evidence.series == rf::scalarSeries(rf::scalar::kLoss) && !loss.empty());
    return {file, caption + ": " + (onLoss ? QObject::tr("loss") : QObject::tr("gradient norm")),
            renderPlot(onLoss ? "loss" : "grad norm", onLoss ? rf::scalar::kLoss : rf::scalar::kGradNorm, steps,
                       onLoss ? loss : gradNorm, {incident}, true, range.first, range.last)};
}

// Replays the incident's own step when it was saved (the onset, else the first NaN) on `rank`
// (-1: a single run), in a child bounded in time, or takes the replay the window handed over; the
// first critical incident is triaged too.
void replayIncident(IncidentSection& section, const Incident& incident, const IncidentReportOptions& options,
                    const QString& runDirectory, int rank, const std::vector<int64_t>& replayable, bool triage)
{
    std::vector<int64_t> candidates{incident.onsetStep};
    if (incident.nonfiniteStep)
        candidates.push_back(*incident.nonfiniteStep);
    QStringList onRank;
    if (rank >= 0)
        onRank << "--rank" << QString::number(rank);
    const QString program = options.program.isEmpty() ? nanscopeProgram() : options.program;
    for (int64_t step : candidates) {
        if (!options.replay || !std::count(replayable.begin(), replayable.end(), step))
            continue;
        section.replayed = true;
        section.replayStep = step;
        const auto known = std::find_if(options.replayed.begin(), options.replayed.end(),
                                        [&](const ReplayReport& r) { return r.result.step == step; });
        if (known != options.replayed.end() && rank < 0) {
            section.replay = *known; // the user has just replayed it: not again
        } else {
            // A user's model runs here: in a child, bounded in time, so a crash or a hang becomes a
            // line of the report instead of the report's end.
            const ChildOutcome outcome = ChildProgram::runAndWait(
                program, QStringList{"replay", runDirectory, "--step", QString::number(step), "--json", "--bisect"} + onRank,
                600000);
            section.replay = replayReportFrom(outcome, step);
        }
        // Is it the batch, the state or both?
        if (triage) {
            section.triaged = true;
            section.triage = triageReportFrom(
                ChildProgram::runAndWait(program,
                                         QStringList{"triage", runDirectory, "--step", QString::number(step), "--json"} + onRank,
                                         1800000),
                step);
        }
        return;
    }
}

} // namespace

Result<ReportContent> gather(const QString& runDirectory, const IncidentReportOptions& options,
                             const ProgressCallback& progress)
{
    auto opened = openRun(runDirectory.toStdString());
    if (!opened)
        return Error{opened.error()};
    const RunSource& reader = **opened;
    ReportContent c;
    c.info = reader.info();
    c.runName = text(c.info.runName);
    c.directory = QFileInfo(runDirectory).absoluteFilePath();
    c.generated = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
    // A multi-rank run: every rank's incidents, each naming its rank.
    auto scanned = scanRun(reader, options.scanConfig, [&](double f, const std::string& w) { return reportProgress(progress, f * 0.4, w); });
    if (!scanned)
        return Error{scanned.error()};
    c.scan = std::move(scanned->report);
    const auto& steps = reader.steps(rf::kScalars);
    c.steps = qint64(steps.size());
    c.firstStep = steps.empty() ? 0 : steps.front();
    c.lastStep = steps.empty() ? 0 : steps.back();

    if (const TableInfo* buffers = reader.table(rf::kBuffers)) {
        const auto& bufferSteps = reader.steps(rf::kBuffers);
        for (size_t col = 0; col < buffers->names.size(); ++col) {
            BatchNormState state{text(buffers->names[col])};
            auto nonfinite = reader.readColumn(rf::kBuffers, rf::column::kNonfinite, int64_t(col));
            auto varMin = reader.readColumn(rf::kBuffers, rf::column::kRunningVarMin, int64_t(col));
            const auto history = batchnorm::judgeHistory(
                bufferSteps, nonfinite ? std::vector<double>(nonfinite->begin(), nonfinite->end()) : std::vector<double>(),
                varMin ? std::vector<double>(varMin->begin(), varMin->end()) : std::vector<double>(),
                options.scanConfig.runningVarFloor);
            state.nonfiniteFrom = history.poisonedFrom;
            state.collapsedAt = history.negativeFrom >= 0 ? history.negativeFrom : history.collapsedFrom;
            c.batchNorm.push_back(state);
        }
    }

    auto series = [&](const char* name) {
        auto values = reader.readSeries(rf::kScalars, name);
        return values ? *values : std::vector<double>();
    };
    const std::vector<double> gradNorm = series(rf::scalar::kGradNorm);
    const std::vector<double> loss = series(rf::scalar::kLoss);
    const bool haveGrad = !gradNorm.empty();
    c.plots.push_back({"timeline.png", QObject::tr("Incident timeline on the %1").arg(haveGrad ? "gradient norm" : "loss"),
                       renderPlot(haveGrad ? "grad norm" : "loss", haveGrad ? rf::scalar::kGradNorm : rf::scalar::kLoss, steps,
                                  haveGrad ? gradNorm : loss, c.scan.incidents, true, 0, 0)});

    if (!options.compareWith.isEmpty()) {
        auto comparison = compareForReport(reader, c.directory, c.scan, options.compareWith, options.scanConfig);
        if (!comparison)
            return Error{comparison.error()};
        c.comparison = std::move(*comparison);
        QString caption;
        const QImage image = renderComparisonPlot(*c.comparison, &caption);
        if (!image.isNull()) {
            c.comparisonPlotIndex = int(c.plots.size());
            c.plots.push_back({"comparison.png", caption, image});
        }
    }

    // A multi-rank run keeps its checkpoints and batches per rank: each incident is replayed on
    // the rank it was found on (or the one asked for), from that rank's folder.
    const RankSet* ranks = reader.rankSet();
    const auto rankOf = [&](const Incident& incident) {
        if (!ranks)
            return -1;
        return options.rank >= 0 ? options.rank : incident.rank.value_or(ranks->selectedRank());
    };
    const auto replayableOn = [&](int rank) {
        if (rank < 0)
            return c.info.replayableSteps();
        const RankMember* member = ranks->member(rank);
        return member && member->run ? member->run->info().replayableSteps() : std::vector<int64_t>{};
    };
    int done = 0;
    for (const Incident& incident : c.scan.incidents) {
        if (incident.severity != Severity::Critical)
            continue;
        if (!reportProgress(progress, 0.4 + 0.5 * done++ / double(std::max<size_t>(1, c.scan.incidents.size())),
                            "replaying the incident at step " + std::to_string(incident.onsetStep)))
            return Error{"cancelled"};
        IncidentSection section;
        section.incident = incident;
        const StepRange range = incidentViewRange(incident, c.firstStep, c.lastStep);
        section.plotIndex = int(c.plots.size());
        c.plots.push_back(incidentPlot(reader, incident, QString("incident%1.png").arg(c.critical.size() + 1), range,
                                       steps, loss, gradNorm));
        replayIncident(section, incident, options, runDirectory, rankOf(incident), replayableOn(rankOf(incident)),
                       c.critical.empty());
        c.critical.push_back(section);
    }
    reportProgress(progress, 0.95, "writing");
    return c;
}

} // namespace nanscope::report
