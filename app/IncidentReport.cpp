#include "IncidentReport.h"

#include "core/run/RankSet.h"
#include "JsonNumbers.h"

#include "CompareJson.h"
#include "ComparisonReport.h"
#include "IncidentJson.h"
#include "ReplayProcess.h"
#include "TriageJson.h"

#include "core/source/RunScan.h"
#include "core/torch/Replay.h"
#include "core/run/RunFormat.h"
#include "core/source/OpenRun.h"
#include "core/tensor/BatchNormHealth.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPdfWriter>
#include <QSaveFile>
#include <QTextDocument>

#include <cmath>
#include <filesystem>

namespace nanscope {

namespace {
// The layers the timeline names per incident; the rest are counted.
constexpr size_t kLayersInTimeline = 4;

namespace rf = runformat;

QString rankText(const Incident& incident)
{
    return incident.rank ? QString::number(*incident.rank) : QString("-");
}

struct Plot
{
    QString name; // resource name, e.g. "timeline.png"
    QString caption;
    QImage image;
};

struct BatchNormState
{
    QString layer;
    qint64 nonfiniteFrom = -1; // first step with non-finite running stats
    qint64 collapsedAt = -1;   // first step with a collapsed or negative running variance (BatchNormHealth.h)
};

struct IncidentSection
{
    Incident incident;
    int plotIndex = -1;
    bool replayed = false;
    qint64 replayStep = -1;
    ReplayReport replay;
    bool triaged = false; // the first critical incident's replayed step only: a triage is up to seven replays
    TriageReport triage;
};

// Everything the report says, gathered once and written in the chosen format.
struct ReportContent
{
    QString runName, directory, generated;
    RunInfo info;
    ScanReport scan;
    qint64 steps = 0, firstStep = 0, lastStep = 0;
    std::vector<BatchNormState> batchNorm;
    std::vector<IncidentSection> critical;
    std::vector<Plot> plots;
    std::optional<RunComparison> comparison; // --compare: this run against others
    int comparisonPlotIndex = -1;
    QString nanscopeVersion = NANSCOPE_VERSION;
    QString libtorch = QString::fromStdString(libtorchVersion());
};

// `dataset`: the /scalars dataset the plot shows ("loss").
QImage renderPlot(const QString& title, const std::string& dataset, const std::vector<int64_t>& steps,
                  const std::vector<double>& values, const std::vector<Incident>& incidents, bool logScale,
                  double from, double to)
{
    SeriesPlot plot(title);
    plot.resize(1000, 320);
    plot.setLogScale(logScale);
    plot.setSeries(steps, values);
    markIncidents(plot, incidents, true, QString::fromStdString(rf::scalarSeries(dataset)));
    if (to > from)
        plot.setStepRange(from, to);
    return plot.plot()->toPixmap(1000, 300).toImage();
}

QString range(const std::optional<TensorStats>& v)
{
    const std::string counts = nonfiniteCountsText(v);
    return text(finiteRangeText(v) + (counts.empty() ? "" : " (" + counts + ")"));
}

QString evidenceText(const IncidentEvidence& e)
{
    QStringList parts;
    if (!e.series.empty())
        parts << QString("%1, steps %2..%3").arg(text(e.series)).arg(e.windowBeginStep).arg(e.windowEndStep);
    if (e.baseline)
        parts << QString("baseline %1").arg(*e.baseline, 0, 'g', 3);
    if (e.peak)
        parts << QString("peak %1").arg(*e.peak, 0, 'g', 3);
    if (e.jumpRatio)
        parts << QString("jump x%1").arg(*e.jumpRatio, 0, 'g', 3);
    if (e.growthDecadesPerStep) {
        QString growth = QString("growth %1 decades/step").arg(*e.growthDecadesPerStep, 0, 'g', 3);
        if (*e.growthDecadesPerStep > 0 && *e.growthDecadesPerStep < 0.5)
            growth += QString(" (x10 every %1 steps)").arg(1.0 / *e.growthDecadesPerStep, 0, 'f', 0);
        parts << growth;
    }
    if (e.count)
        parts << QString("count %1").arg(*e.count);
    for (const auto& fact : signatureFacts(e))
        parts << text(fact);
    if (!e.note.empty())
        parts << text(e.note);
    return parts.join("; ");
}

// "data: Batch 180 blows up ...", then one line per replay of the evidence.
QStringList triageLines(const IncidentSection& s)
{
    if (!s.triaged)
        return {};
    if (!s.triage.error.isEmpty())
        return {QObject::tr("Triage of step %1 failed: %2").arg(s.replayStep).arg(s.triage.error)};
    const TriageEvidence& e = s.triage.evidence;
    QStringList lines{QObject::tr("%1. %2").arg(text(triageLabelName(s.triage.verdict.label)), text(s.triage.verdict.why))};
    auto stepText = [](int64_t step) { return step >= 0 ? QString::number(step) : QString("-"); };
    for (const TriageReplay& r : e.replays)
        lines << QObject::tr("%1: checkpoint %2, batch %3: %4%5")
                     .arg(text(triageRoleName(r.role)), stepText(r.checkpointStep), stepText(r.batchStep),
                          text(triageResultText(r, e.typicalLoss)),
                          r.ran ? QObject::tr(", loss %1").arg(r.loss, 0, 'g', 5) : QString());
    for (const std::string& detail : s.triage.verdict.details)
        lines << text(detail);
    return lines;
}

QString replaySummary(const IncidentSection& s)
{
    if (!s.replayed)
        return QObject::tr("No checkpoint and batch were saved for this incident's steps: no replay.");
    if (!s.replay.error.isEmpty())
        return QObject::tr("Replay of step %1 failed: %2").arg(s.replayStep).arg(s.replay.error);
    QString out = QObject::tr("Replay of step %1 (%2, %3): ").arg(s.replayStep).arg(s.replay.mode, s.replay.dtype);
    const ReplayResult& r = s.replay.result;
    if (forwardVerdict(r) == ForwardVerdict::NonfiniteLossUnseen)
        out += QObject::tr(kNonfiniteLossUnseenText);
    else if (!r.firstNonfinite)
        out += QObject::tr("the forward pass is finite (loss %1).").arg(r.loss, 0, 'g', 5);
    else
        // One multi-argument arg(): a second pass would read a '%2' inside the code as a placeholder.
        out += QObject::tr("first non-finite value from %1 in module '%2' at %3%4; inputs %5.")
                   .arg(text(r.firstNonfinite->op), r.firstNonfinite->module.empty() ? QString("(root)") : text(r.firstNonfinite->module),
                        text(r.firstNonfinite->source),
                        r.firstNonfinite->code.empty() ? QString() : QString(" (%1)").arg(text(r.firstNonfinite->code)),
                        [&] {
                            QStringList inputs;
                            for (const auto& v : r.firstNonfinite->inputs)
                                inputs << range(v);
                            return inputs.join(", ");
                        }());
    if (!r.firstNonfinite && r.gradCulprit)
        out += QObject::tr(" Backward first made a non-finite gradient in %1 in module '%2' at %3.")
                   .arg(text(r.gradCulprit->op), r.gradCulprit->module.empty() ? QString("(root)") : text(r.gradCulprit->module),
                        text(r.gradCulprit->source));
    if (r.lossConvention == LossConvention::InForward)
        out += QObject::tr(" The loss was the model's own, %1.").arg(text(r.lossFrom));
    if (r.bisected) {
        QStringList samples;
        for (int64_t i : r.badSamples)
            samples << QString::number(i);
        out += QObject::tr(" Bad samples: %1.").arg(samples.isEmpty() ? QObject::tr("none") : samples.join(", "));
    }
    if (r.logits && r.logits->logZMean)
        out += QObject::tr(" log Z of the logits: mean %1, max %2.")
                   .arg(QString::number(*r.logits->logZMean, 'g', 4), QString::number(*r.logits->logZMax, 'g', 4));
    for (const ReplayFinding& finding : r.findings)
        out += " " + text(finding.cause) + " " + QObject::tr("Suggestion: %1").arg(text(finding.suggestion));
    return out;
}

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
    auto scanned = scanRun(reader, ScanConfig{}, [&](double f, const std::string& w) { return reportProgress(progress, f * 0.4, w); });
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
            auto nonfinite = reader.readColumn(rf::kBuffers, "nonfinite", int64_t(col));
            auto varMin = reader.readColumn(rf::kBuffers, "running_var_min", int64_t(col));
            const auto history = batchnorm::judgeHistory(
                bufferSteps, nonfinite ? std::vector<double>(nonfinite->begin(), nonfinite->end()) : std::vector<double>(),
                varMin ? std::vector<double>(varMin->begin(), varMin->end()) : std::vector<double>());
            state.nonfiniteFrom = history.poisonedFrom;
            state.collapsedAt = history.negativeFrom >= 0 ? history.negativeFrom : history.collapsedFrom;
            c.batchNorm.push_back(state);
        }
    }

    auto series = [&](const char* name) {
        auto values = reader.readSeries(rf::kScalars, name);
        return values ? *values : std::vector<double>();
    };
    const std::vector<double> gradNorm = series("grad_norm");
    const std::vector<double> loss = series("loss");
    const bool haveGrad = !gradNorm.empty();
    c.plots.push_back({"timeline.png", QObject::tr("Incident timeline on the %1").arg(haveGrad ? "gradient norm" : "loss"),
                       renderPlot(haveGrad ? "grad norm" : "loss", haveGrad ? "grad_norm" : "loss", steps,
                                  haveGrad ? gradNorm : loss, c.scan.incidents, true, 0, 0)});

    if (!options.compareWith.isEmpty()) {
        auto comparison = compareForReport(reader, c.directory, c.scan, options.compareWith);
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
        // An incident measured on the loss (a divergence) is drawn on the loss, with its trend.
        const bool onLoss = !haveGrad || (incident.evidence.series == rf::scalarSeries("loss") && !loss.empty());
        c.plots.push_back({QString("incident%1.png").arg(c.critical.size() + 1),
                           QObject::tr("%1 at step %2").arg(toString(incident.kind)).arg(incident.onsetStep),
                           renderPlot(onLoss ? "loss" : "grad norm", onLoss ? "loss" : "grad_norm", steps,
                                      onLoss ? loss : gradNorm, {incident}, true, range.first, range.last)});
        // Replay the incident's own step when it was saved: the onset, else the first NaN.
        std::vector<int64_t> candidates{incident.onsetStep};
        if (incident.nonfiniteStep)
            candidates.push_back(*incident.nonfiniteStep);
        const int rank = rankOf(incident);
        const std::vector<int64_t> replayable = replayableOn(rank);
        QStringList onRank;
        if (rank >= 0)
            onRank << "--rank" << QString::number(rank);
        for (int64_t step : candidates)
            if (options.replay && std::count(replayable.begin(), replayable.end(), step)) {
                section.replayed = true;
                section.replayStep = step;
                // A user's model runs here: in a child, bounded in time, so a crash or a hang
                // becomes a line of the report instead of the report's end.
                const ChildOutcome outcome = ChildProgram::runAndWait(
                    options.program.isEmpty() ? nanscopeProgram() : options.program,
                    QStringList{"replay", runDirectory, "--step", QString::number(step), "--json", "--bisect"} + onRank,
                    600000);
                section.replay = replayReportFrom(outcome, step);
                // Is it the batch, the state or both? For the first critical incident only.
                if (c.critical.empty()) {
                    section.triaged = true;
                    section.triage = triageReportFrom(
                        ChildProgram::runAndWait(options.program.isEmpty() ? nanscopeProgram() : options.program,
                                                 QStringList{"triage", runDirectory, "--step", QString::number(step), "--json"} + onRank,
                                                 1800000),
                        step);
                }
                break;
            }
        c.critical.push_back(section);
    }
    reportProgress(progress, 0.95, "writing");
    return c;
}

QString batchNormText(const BatchNormState& s)
{
    if (s.nonfiniteFrom >= 0)
        return QObject::tr("%1: running statistics non-finite from step %2 on (evaluation returns NaN)").arg(s.layer).arg(s.nonfiniteFrom);
    if (s.collapsedAt >= 0)
        return QObject::tr("%1: running variance collapsed at step %2").arg(s.layer).arg(s.collapsedAt);
    return QObject::tr("%1: running statistics finite throughout").arg(s.layer);
}

QByteArray toJsonReport(const ReportContent& c)
{
    QJsonArray incidents;
    for (const Incident& incident : c.scan.incidents)
        incidents.append(toJson(incident));
    QJsonArray critical;
    for (const auto& s : c.critical) {
        QJsonObject o = toJson(s.incident);
        if (s.replayed) {
            QJsonObject replay{{"step", s.replayStep}};
            if (!s.replay.error.isEmpty())
                replay["error"] = s.replay.error;
            else {
                const ReplayResult& r = s.replay.result;
                replay["first_nonfinite"] = !r.firstNonfinite ? QJsonValue()
                                                               : QJsonValue(QJsonObject{{"op", text(r.firstNonfinite->op)},
                                                                                        {"module", text(r.firstNonfinite->module)},
                                                                                        {"source", text(r.firstNonfinite->source)},
                                                                                        {"code", text(r.firstNonfinite->code)}});
                QJsonArray bad;
                for (int64_t i : r.badSamples)
                    bad.append(qint64(i));
                replay["bad_samples"] = bad;
                replay["loss_convention"] = lossConventionKey(r.lossConvention);
                if (r.gradCulprit)
                    replay["backward_culprit"] = QJsonObject{{"op", text(r.gradCulprit->op)},
                                                             {"module", text(r.gradCulprit->module)},
                                                             {"source", text(r.gradCulprit->source)},
                                                             {"code", text(r.gradCulprit->code)}};
                if (r.logits) {
                    replay["log_z_mean"] = jsonNumber(r.logits->logZMean);
                    replay["log_z_max"] = jsonNumber(r.logits->logZMax);
                }
                QJsonArray findings;
                for (const ReplayFinding& f : r.findings)
                    findings.append(QJsonObject{{"signal", replaySignalKey(f.signal)}, {"cause", text(f.cause)},
                                                {"suggestion", text(f.suggestion)}});
                replay["findings"] = findings;
            }
            o["replay"] = replay;
        }
        if (s.triaged)
            o["triage"] = s.triage.error.isEmpty() ? triageToJson(s.triage) : QJsonObject{{"error", s.triage.error}};
        critical.append(o);
    }
    QJsonArray bn;
    for (const auto& s : c.batchNorm)
        bn.append(QJsonObject{{"layer", s.layer},
                              {"nonfinite_from", s.nonfiniteFrom >= 0 ? QJsonValue(s.nonfiniteFrom) : QJsonValue()},
                              {"collapsed_at", s.collapsedAt >= 0 ? QJsonValue(s.collapsedAt) : QJsonValue()}});
    QJsonObject attributes;
    for (const auto& [k, v] : c.info.attributes)
        attributes[text(k)] = text(v);
    QJsonObject root{{"run", QJsonObject{{"name", c.runName}, {"directory", c.directory}, {"steps", c.steps},
                                         {"first_step", c.firstStep}, {"last_step", c.lastStep},
                                         {"checkpoints", qint64(c.info.checkpoints.size())},
                                         {"batches", qint64(c.info.batches.size())},
                                         {"source", text(c.info.source.format)},
                                         {"source_lacks", [&] {
                                              QJsonArray lacks;
                                              for (const auto& line : c.info.source.lacks)
                                                  lacks.append(text(line));
                                              return lacks;
                                          }()}}},
                     {"incidents", incidents},
                     {"critical", critical},
                     {"batchnorm", bn},
                     {"comparison", c.comparison ? QJsonValue(comparisonToJson(*c.comparison)) : QJsonValue()},
                     {"environment", QJsonObject{{"attributes", attributes}, {"nanscope", c.nanscopeVersion},
                                                 {"libtorch", c.libtorch}, {"qt", QString(qVersion())},
                                                 {"generated_utc", c.generated}}}};
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QString toMarkdown(const ReportContent& c)
{
    QString md;
    md += QString("# Incident report: %1\n\n").arg(c.runName);
    md += QString("Run `%1`: %2 logged steps (%3..%4), %5 checkpoints, %6 saved batches. %7 incident(s), %8 critical.\n\n")
              .arg(c.directory).arg(c.steps).arg(c.firstStep).arg(c.lastStep)
              .arg(c.info.checkpoints.size()).arg(c.info.batches.size())
              .arg(c.scan.incidents.size()).arg(c.critical.size());
    if (const std::string summary = sourceSummary(c.info); !summary.empty())
        md += "> " + text(summary) + "\n\n";
    // A multi-rank run's incidents name the rank they were found on.
    const bool ranks = c.scan.namesRanks();
    md += QString("## Timeline\n\n| severity | kind | pattern | onset |%1 non-finite at | layers |\n|---|---|---|---|%2---|---|\n")
              .arg(ranks ? " rank |" : "", ranks ? "---|" : "");
    for (const Incident& i : c.scan.incidents) {
        QStringList layers;
        for (size_t k = 0; k < i.layers.size() && k < kLayersInTimeline; ++k)
            layers << QString("`%1`").arg(text(i.layers[k]));
        if (i.layers.size() > kLayersInTimeline) // as the window says "+6", never a silent cut
            layers << QString("+%1 more").arg(i.layers.size() - kLayersInTimeline);
        md += QString("| %1 | %2 | %3 | %4 |%5 %6 | %7 |\n")
                  .arg(toString(i.severity), toString(i.kind), i.pattern ? toString(*i.pattern) : "")
                  .arg(i.onsetStep)
                  .arg(ranks ? QString(" %1 |").arg(rankText(i)) : QString())
                  .arg(i.nonfiniteStep ? QString::number(*i.nonfiniteStep) : QString("-"))
                  .arg(layers.join(", "));
    }
    if (c.scan.incidents.empty())
        md += "| - | no incident | | | | |\n";
    int n = 0;
    for (const auto& s : c.critical) {
        const Incident& i = s.incident;
        md += QString("\n## %1. %2 at step %3\n\n").arg(++n).arg(toString(i.kind)).arg(i.onsetStep);
        if (i.pattern)
            md += QString("- **Pattern:** %1\n").arg(toString(*i.pattern));
        md += QString("- **Evidence:** %1\n").arg(evidenceText(i.evidence));
        md += QString("- **First bad layer:** %1\n").arg(i.layers.empty() ? QString("-") : QString("`%1`").arg(text(i.layers.front())));
        QStringList bn;
        for (const auto& b : c.batchNorm)
            bn << batchNormText(b);
        md += QString("- **BatchNorm:** %1\n").arg(bn.isEmpty() ? QString("no normalisation buffers logged") : bn.join("; "));
        md += QString("- **Replay:** %1\n").arg(replaySummary(s));
        if (const QStringList triage = triageLines(s); !triage.isEmpty())
            md += QString("- **Triage:** %1\n").arg(triage.join("\n  - "));
        md += QString("- **Probable cause:** %1\n").arg(text(i.cause));
        md += QString("- **Suggested fix:** %1\n").arg(text(i.suggestion));
    }
    if (c.comparison)
        md += comparisonMarkdown(*c.comparison);
    md += "\n## Environment\n\n";
    for (const auto& [k, v] : c.info.attributes)
        md += QString("- %1: %2\n").arg(text(k), text(v));
    md += QString("- nanscope %1, LibTorch %2, Qt %3; generated %4\n").arg(c.nanscopeVersion, c.libtorch, qVersion(), c.generated);
    return md;
}

// `imageSource` maps a plot to what <img src> holds: a data: URL (HTML) or a resource name (PDF).
template<typename ImageSource>
QString toHtml(const ReportContent& c, ImageSource imageSource, int imageWidth)
{
    auto esc = [](const QString& s) { return s.toHtmlEscaped(); };
    QString h;
    h += "<!DOCTYPE html><html><head><meta charset='utf-8'><title>nanscope incident report: " + esc(c.runName) + "</title>";
    h += "<style>body{font-family:sans-serif;max-width:1040px;margin:24px auto;color:#1f2937}"
         "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}"
         "th{background:#f3f4f6}.critical{color:#b91c1c;font-weight:bold}.warning{color:#b45309}"
         "dt{font-weight:bold;margin-top:6px}dd{margin-left:16px}code{background:#f3f4f6}</style></head><body>";
    h += "<h1>Incident report: " + esc(c.runName) + "</h1>";
    h += QString("<p>Run <code>%1</code>: %2 logged steps (%3..%4), %5 checkpoints, %6 saved batches. "
                 "<b>%7 incident(s), %8 critical.</b></p>")
             .arg(esc(c.directory)).arg(c.steps).arg(c.firstStep).arg(c.lastStep)
             .arg(c.info.checkpoints.size()).arg(c.info.batches.size())
             .arg(c.scan.incidents.size()).arg(c.critical.size());
    if (const std::string summary = sourceSummary(c.info); !summary.empty())
        h += "<p style='background:#eef3fb;padding:6px'>" + esc(text(summary)) + "</p>";
    h += "<h2>Timeline</h2>";
    h += QString("<p><img src='%1' width='%3'><br><i>%2</i></p>").arg(imageSource(c.plots[0]), esc(c.plots[0].caption)).arg(imageWidth);
    const bool ranks = c.scan.namesRanks();
    h += QString("<table><tr><th>severity</th><th>kind</th><th>pattern</th><th>onset</th>%1<th>non-finite at</th>"
                 "<th>layers</th></tr>")
             .arg(ranks ? "<th>rank</th>" : "");
    for (const Incident& i : c.scan.incidents) {
        QStringList layers;
        for (size_t k = 0; k < i.layers.size() && k < kLayersInTimeline; ++k)
            layers << esc(text(i.layers[k]));
        if (i.layers.size() > kLayersInTimeline)
            layers << QString("+%1 more").arg(i.layers.size() - kLayersInTimeline);
        h += QString("<tr><td class='%1'>%1</td><td>%2</td><td>%3</td><td>%4</td>%5<td>%6</td><td>%7</td></tr>")
                 .arg(toString(i.severity), toString(i.kind), i.pattern ? toString(*i.pattern) : "")
                 .arg(i.onsetStep)
                 .arg(ranks ? QString("<td>%1</td>").arg(rankText(i)) : QString())
                 .arg(i.nonfiniteStep ? QString::number(*i.nonfiniteStep) : QString("-"))
                 .arg(layers.join(", "));
    }
    if (c.scan.incidents.empty())
        h += "<tr><td colspan='6'>No incident: the run looks healthy.</td></tr>";
    h += "</table>";
    int n = 0;
    for (const auto& s : c.critical) {
        const Incident& i = s.incident;
        h += QString("<h2>%1. %2 at step %3</h2>").arg(++n).arg(toString(i.kind)).arg(i.onsetStep);
        if (s.plotIndex >= 0)
            h += QString("<p><img src='%1' width='%2'></p>").arg(imageSource(c.plots[size_t(s.plotIndex)])).arg(imageWidth);
        h += "<dl>";
        if (i.pattern)
            h += QString("<dt>Pattern</dt><dd>%1</dd>").arg(toString(*i.pattern));
        h += QString("<dt>Evidence</dt><dd>%1</dd>").arg(esc(evidenceText(i.evidence)));
        h += QString("<dt>First bad layer</dt><dd><code>%1</code></dd>").arg(i.layers.empty() ? QString("-") : esc(text(i.layers.front())));
        QStringList bn;
        for (const auto& b : c.batchNorm)
            bn << esc(batchNormText(b));
        h += QString("<dt>BatchNorm state</dt><dd>%1</dd>").arg(bn.isEmpty() ? QString("no normalisation buffers logged") : bn.join("<br>"));
        h += QString("<dt>Replay</dt><dd>%1</dd>").arg(esc(replaySummary(s)));
        if (const QStringList triage = triageLines(s); !triage.isEmpty()) {
            QStringList escaped;
            for (const QString& line : triage)
                escaped << esc(line);
            h += QString("<dt>Triage</dt><dd>%1</dd>").arg(escaped.join("<br>"));
        }
        h += QString("<dt>Probable cause</dt><dd>%1</dd>").arg(esc(text(i.cause)));
        h += QString("<dt>Suggested fixes</dt><dd>%1</dd>").arg(esc(text(i.suggestion)));
        h += "</dl>";
    }
    if (c.comparison) {
        const QString image = c.comparisonPlotIndex < 0 ? QString()
                                                        : QString("<p><img src='%1' width='%3'><br><i>%2</i></p>")
                                                              .arg(imageSource(c.plots[size_t(c.comparisonPlotIndex)]),
                                                                   esc(c.plots[size_t(c.comparisonPlotIndex)].caption))
                                                              .arg(imageWidth);
        h += comparisonHtml(*c.comparison, image);
    }
    h += "<h2>Environment</h2><table>";
    for (const auto& [k, v] : c.info.attributes)
        h += QString("<tr><th>%1</th><td>%2</td></tr>").arg(esc(text(k)), esc(text(v)));
    h += QString("<tr><th>nanscope</th><td>%1 (LibTorch %2, Qt %3)</td></tr><tr><th>generated</th><td>%4 UTC</td></tr></table>")
             .arg(c.nanscopeVersion, c.libtorch, qVersion(), c.generated);
    h += "</body></html>";
    return h;
}

QString pngDataUrl(const QImage& image)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return "data:image/png;base64," + QString::fromLatin1(bytes.toBase64());
}

Status saveAtomically(const QString& path, const QByteArray& bytes)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return Error{path.toStdString() + ": cannot write (" + file.errorString().toStdString() + ")"};
    file.write(bytes);
    if (!file.commit())
        return Error{path.toStdString() + ": cannot write (" + file.errorString().toStdString() + ")"};
    return Status::success();
}

} // namespace

Status writeIncidentReport(const QString& runDirectory, const QString& outputPath, const IncidentReportOptions& options,
                           const ProgressCallback& progress)
{
    const QString suffix = QFileInfo(outputPath).suffix().toLower();
    if (!QStringList{"html", "htm", "pdf", "md", "json"}.contains(suffix))
        return Error{outputPath.toStdString() + ": the report format follows the extension: .html, .pdf, .md or .json"};
    auto content = gather(runDirectory, options, progress);
    if (!content)
        return Error{content.error()};
    const ReportContent& c = *content;
    Status status;
    if (suffix == "json")
        status = saveAtomically(outputPath, toJsonReport(c));
    else if (suffix == "md")
        status = saveAtomically(outputPath, toMarkdown(c).toUtf8());
    else if (suffix == "html" || suffix == "htm")
        status = saveAtomically(outputPath, toHtml(c, [](const Plot& p) { return pngDataUrl(p.image); }, 960).toUtf8());
    else {
        // PDF: rendered to a temporary file beside the target, then renamed over it in one step.
        QTextDocument document;
        for (const auto& plot : c.plots)
            document.addResource(QTextDocument::ImageResource, QUrl(plot.name), plot.image);
        document.setHtml(toHtml(c, [](const Plot& p) { return p.name; }, 620));
        const QString temporary = outputPath + ".part";
        {
            QPdfWriter writer(temporary);
            writer.setResolution(96); // lay the page out in screen pixels, as the HTML is
            writer.setPageSize(QPageSize(QPageSize::A4));
            writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
            writer.setTitle("nanscope incident report: " + c.runName);
            writer.setCreator("nanscope " + c.nanscopeVersion);
            document.setPageSize(QSizeF(writer.width(), writer.height()));
            document.print(&writer);
        }
        std::error_code ec;
        std::filesystem::rename(temporary.toStdString(), outputPath.toStdString(), ec);
        if (ec) {
            std::filesystem::remove(temporary.toStdString(), ec);
            return Error{outputPath.toStdString() + ": cannot write the PDF"};
        }
    }
    reportProgress(progress, 1.0, "done");
    return status;
}

} // namespace nanscope
