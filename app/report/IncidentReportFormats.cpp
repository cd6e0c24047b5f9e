// The incident report's formats: JSON, Markdown and HTML (the PDF prints the HTML), each from the
// content gathered once (IncidentReportGather.cpp).
#include "app/report/IncidentReportContent.h"

#include "app/codecs/CompareJson.h"
#include "app/report/ComparisonReport.h"
#include "app/codecs/IncidentJson.h"
#include "app/codecs/JsonNumbers.h"
#include "app/codecs/ReplayJson.h"
#include "app/codecs/TriageJson.h"

#include "core/NumberText.h"
#include "core/scan/Diagnosis.h"

#include <QBuffer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace nanscope::report {

namespace {
// The layers the timeline names per incident; the rest are counted.
constexpr size_t kLayersInTimeline = 4;

QString rankText(const Incident& incident)
{
    return incident.rank ? QString::number(*incident.rank) : QString("-");
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
                          r.ran ? QObject::tr(", loss %1").arg(QString::fromStdString(numberText(r.loss, 5))) : QString());
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
        out += QObject::tr("the forward pass is finite (loss %1).").arg(QString::fromStdString(numberText(r.loss, 5)));
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
        out += QObject::tr(" Bad samples (%1): %2.")
                   .arg(r.badSampleCriterion.empty() ? QObject::tr("a non-finite value") : text(r.badSampleCriterion),
                        samples.isEmpty() ? QObject::tr("none") : samples.join(", "));
    }
    if (r.logits && r.logits->logZMean)
        out += QObject::tr(" log Z of the logits: mean %1, max %2.")
                   .arg(QString::fromStdString(numberText(*r.logits->logZMean, 4)), QString::fromStdString(numberText(*r.logits->logZMax, 4)));
    for (const ReplayFinding& finding : r.findings)
        out += " " + text(finding.cause) + " " + QObject::tr("Suggestion: %1").arg(text(finding.suggestion));
    return out;
}

QString batchNormText(const BatchNormState& s);

// The BatchNorm state of the run, said once rather than in every incident (a list of 20 layers
// each time buries the incidents): each damaged layer, then how many stayed finite. Empty when no buffers were logged.
QStringList batchNormLines(const std::vector<BatchNormState>& layers)
{
    QStringList lines;
    int healthy = 0;
    for (const auto& s : layers) {
        if (s.nonfiniteFrom < 0 && s.collapsedAt < 0)
            ++healthy;
        else
            lines << batchNormText(s);
    }
    if (healthy > 0)
        lines << (lines.isEmpty() ? QObject::tr("all %1 normalisation layer(s): running statistics finite throughout").arg(healthy)
                                  : QObject::tr("the other %1 normalisation layer(s): running statistics finite throughout")
                                        .arg(healthy));
    return lines;
}

QString batchNormText(const BatchNormState& s)
{
    if (s.nonfiniteFrom >= 0)
        return QObject::tr("%1: running statistics non-finite from step %2 on (evaluation returns NaN)").arg(s.layer).arg(s.nonfiniteFrom);
    if (s.collapsedAt >= 0)
        return QObject::tr("%1: running variance collapsed at step %2").arg(s.layer).arg(s.collapsedAt);
    return QObject::tr("%1: running statistics finite throughout").arg(s.layer);
}

// The scan's warnings, in its order (most severe first): the incidents the report lists with
// their cause and fix, though it replays only the critical ones.
std::vector<const Incident*> warnings(const ScanReport& scan)
{
    std::vector<const Incident*> warned;
    for (const Incident& incident : scan.incidents)
        if (incident.severity == Severity::Warning)
            warned.push_back(&incident);
    return warned;
}

} // namespace

QByteArray toJsonReport(const ReportContent& c)
{
    QJsonArray incidents;
    for (const Incident& incident : c.scan.incidents)
        incidents.append(toJson(incident));
    QJsonArray critical;
    for (const auto& s : c.critical) {
        QJsonObject o = toJson(s.incident);
        if (s.replayed) {
            QJsonObject replay = s.replay.error.isEmpty() ? replaySummaryToJson(s.replay.result)
                                                          : QJsonObject{{"error", s.replay.error}};
            replay["step"] = s.replayStep;
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
    md += "\n## BatchNorm state\n\n";
    {
        const QStringList bn = batchNormLines(c.batchNorm);
        md += bn.isEmpty() ? QString("No normalisation buffers logged.\n") : "- " + bn.join("\n- ") + "\n";
    }
    int n = 0;
    for (const auto& s : c.critical) {
        const Incident& i = s.incident;
        md += QString("\n## %1. %2 at step %3\n\n").arg(++n).arg(toString(i.kind)).arg(i.onsetStep);
        if (i.pattern)
            md += QString("- **Pattern:** %1\n").arg(toString(*i.pattern));
        md += QString("- **Evidence:** %1\n").arg(evidenceText(i.evidence));
        md += QString("- **First bad layer:** %1\n").arg(i.layers.empty() ? QString("-") : QString("`%1`").arg(text(i.layers.front())));
        md += QString("- **Replay:** %1\n").arg(replaySummary(s));
        if (const QStringList triage = triageLines(s); !triage.isEmpty())
            md += QString("- **Triage:** %1\n").arg(triage.join("\n  - "));
        md += QString("- **Probable cause:** %1\n").arg(text(i.cause));
        md += QString("- **Suggested fix:** %1\n").arg(text(i.suggestion));
    }
    // Warnings are not replayed, but say what they found: a run whose one finding is a warning
    // (a divergence without NaN under x10) would otherwise leave the reader a table row.
    if (const std::vector<const Incident*> warned = warnings(c.scan); !warned.empty()) {
        md += "\n## Warnings\n";
        for (const Incident* i : warned)
            md += QString("\n- **%1 at step %2:** %3 *Suggested fix:* %4\n")
                      .arg(toString(i->kind))
                      .arg(i->onsetStep)
                      .arg(text(i->cause), text(i->suggestion));
    }
    if (c.comparison)
        md += comparisonMarkdown(*c.comparison);
    md += "\n## Environment\n\n";
    for (const auto& [k, v] : c.info.attributes)
        md += QString("- %1: %2\n").arg(text(k), text(v));
    md += QString("- nanscope %1, LibTorch %2, Qt %3; generated %4\n").arg(c.nanscopeVersion, c.libtorch, qVersion(), c.generated);
    return md;
}

QString toHtml(const ReportContent& c, const std::function<QString(const Plot&)>& imageSource, int imageWidth)
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
        // The kind is one word with underscores: never wrapped mid-word (the PDF wrapped "bn_corruptio/n").
        h += QString("<tr><td class='%1'>%1</td><td nowrap style='white-space:nowrap'>%2</td><td>%3</td><td>%4</td>%5"
                     "<td>%6</td><td>%7</td></tr>")
                 .arg(toString(i.severity), toString(i.kind), i.pattern ? toString(*i.pattern) : "")
                 .arg(i.onsetStep)
                 .arg(ranks ? QString("<td>%1</td>").arg(rankText(i)) : QString())
                 .arg(i.nonfiniteStep ? QString::number(*i.nonfiniteStep) : QString("-"))
                 .arg(layers.join(", "));
    }
    if (c.scan.incidents.empty())
        h += "<tr><td colspan='6'>No incident: the run looks healthy.</td></tr>";
    h += "</table>";
    h += "<h2>BatchNorm state</h2><p>";
    {
        QStringList escaped;
        for (const QString& line : batchNormLines(c.batchNorm))
            escaped << esc(line);
        h += escaped.isEmpty() ? QString("No normalisation buffers logged.") : escaped.join("<br>");
    }
    h += "</p>";
    int n = 0;
    for (const auto& s : c.critical) {
        const Incident& i = s.incident;
        h += QString("<h2>%1. %2 at step %3</h2>").arg(++n).arg(toString(i.kind)).arg(i.onsetStep);
        if (s.plotIndex >= 0)
            h += QString("<p><img src='%1' width='%2'><br><i>%3</i></p>")
                     .arg(imageSource(c.plots[size_t(s.plotIndex)]))
                     .arg(imageWidth)
                     .arg(esc(c.plots[size_t(s.plotIndex)].caption));
        h += "<dl>";
        if (i.pattern)
            h += QString("<dt>Pattern</dt><dd>%1</dd>").arg(toString(*i.pattern));
        h += QString("<dt>Evidence</dt><dd>%1</dd>").arg(esc(evidenceText(i.evidence)));
        h += QString("<dt>First bad layer</dt><dd><code>%1</code></dd>").arg(i.layers.empty() ? QString("-") : esc(text(i.layers.front())));
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
    if (const std::vector<const Incident*> warned = warnings(c.scan); !warned.empty()) {
        h += "<h2>Warnings</h2><dl>";
        for (const Incident* i : warned)
            h += QString("<dt class='warning'>%1 at step %2</dt><dd>%3<br><i>Suggested fix:</i> %4</dd>")
                     .arg(toString(i->kind))
                     .arg(i->onsetStep)
                     .arg(esc(text(i->cause)), esc(text(i->suggestion)));
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

} // namespace nanscope::report
