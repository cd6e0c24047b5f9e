#include "app/cli/CliSupport.h"
#include "app/codecs/IncidentJson.h"
#include "app/codecs/ScanSettingsFile.h"
#include "app/cli/Subcommands.h"

#include "core/NumberText.h"
#include "core/run/RankSet.h"
#include "core/open/RunScan.h"
#include "core/scan/RankScan.h"
#include "core/open/OpenRun.h"
#include "core/scan/ScanInputs.h"
#include "core/scan/ScanConfig.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <optional>

namespace nanscope::cli {

namespace {

void printText(const ScanReport& report)
{
    out() << "run " << fromStd(report.runName) << "  steps " << report.firstStep << ".." << report.lastStep << "\n";
    if (report.incidents.empty()) {
        out() << "no incidents: the run looks healthy\n";
    } else {
        out() << QString("\n%1 %2 %3 %4 %5  %6\n")
                     .arg("severity", -9)
                     .arg("kind", -20)
                     .arg("onset", 7)
                     .arg("nonfinite", 9)
                     .arg("pattern", -8)
                     .arg("layers (first bad first)");
        for (const auto& incident : report.incidents) {
            QStringList layers;
            for (size_t i = 0; i < incident.layers.size() && i < 3; ++i)
                layers << fromStd(incident.layers[i]);
            if (incident.layers.size() > 3)
                layers << QString("+%1").arg(incident.layers.size() - 3);
            out() << QString("%1 %2 %3 %4 %5  %6\n")
                         .arg(toString(incident.severity), -9)
                         .arg(toString(incident.kind), -20)
                         .arg(incident.onsetStep, 7)
                         .arg(incident.nonfiniteStep ? QString::number(*incident.nonfiniteStep) : QString("-"), 9)
                         .arg(incident.pattern ? toString(*incident.pattern) : "-", -8)
                         .arg(layers.isEmpty() ? QString("-") : layers.join(", "));
        }
        for (const auto& incident : report.incidents) {
            out() << "\n" << (incident.rank ? QString("rank %1: ").arg(*incident.rank) : QString())
                  << toString(incident.kind) << " at step " << incident.onsetStep << " ("
                  << toString(incident.severity) << ")\n";
            out() << "  cause:      " << fromStd(incident.cause) << "\n";
            out() << "  suggestion: " << fromStd(incident.suggestion) << "\n";
            const auto& e = incident.evidence;
            QStringList facts;
            if (!e.series.empty())
                facts << fromStd(e.series);
            facts << QString("steps %1..%2").arg(e.windowBeginStep).arg(e.windowEndStep);
            if (e.baseline)
                facts << "baseline " + fromStd(numberText(*e.baseline));
            if (e.peak)
                facts << "peak " + fromStd(numberText(*e.peak));
            if (e.jumpRatio)
                facts << "ratio x" + fromStd(numberText(*e.jumpRatio));
            if (e.growthDecadesPerStep)
                facts << fromStd(numberText(*e.growthDecadesPerStep)) + " decades/step";
            if (e.count)
                facts << QString("count %1").arg(*e.count);
            for (const auto& fact : signatureFacts(e))
                facts << fromStd(fact);
            out() << "  evidence:   " << facts.join(", ") << "\n";
            if (!e.note.empty())
                out() << "              " << fromStd(e.note) << "\n";
        }
    }
    for (const auto& note : report.notes)
        out() << "note: " << fromStd(note) << "\n";
}

void printRanks(const RankScanReport& ranks)
{
    out() << "\n" << ranks.worldSize << " ranks (the first to look at: rank " << ranks.focusRank << ")\n";
    out() << QString("%1 %2 %3 %4 %5  %6\n").arg("rank", 5).arg("end", -11).arg("steps", -15).arg("nonfinite", 9)
                 .arg("incidents", 9).arg("");
    for (const RankSummary& rank : ranks.ranks) {
        const QString steps = rank.firstStep ? QString("%1..%2").arg(*rank.firstStep).arg(*rank.lastStep) : "-";
        out() << QString("%1 %2 %3 %4 %5  %6\n")
                     .arg(rank.rank, 5)
                     .arg(toString(rank.end), -11)
                     .arg(steps, -15)
                     .arg(rank.firstNonfiniteStep ? QString::number(*rank.firstNonfiniteStep) : QString("-"), 9)
                     .arg(rank.incidents, 9)
                     .arg(fromStd(rank.error));
    }
}

QJsonArray ranksJson(const RankScanReport& ranks)
{
    QJsonArray array;
    auto step = [](const std::optional<int64_t>& s) { return s ? QJsonValue(qint64(*s)) : QJsonValue(QJsonValue::Null); };
    for (const RankSummary& rank : ranks.ranks)
        array.append(QJsonObject{{"rank", rank.rank},
                                 {"directory", fromStd(rank.directory)},
                                 {"state", toString(rank.end)},
                                 {"recorded_state", toString(rank.recordedState)},
                                 {"first_step", step(rank.firstStep)},
                                 {"last_step", step(rank.lastStep)},
                                 {"first_nonfinite_step", step(rank.firstNonfiniteStep)},
                                 {"incidents", qint64(rank.incidents)},
                                 {"error", fromStd(rank.error)}});
    return array;
}

} // namespace

int runScan(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Find, locate and classify training incidents (blow-ups, NaN losses, spikes, BatchNorm corruption, bad "
        "inputs, loss-scale collapse, skipped steps, vanishing gradients).\n"
        "Exit status: 0 no critical incident, 1 a critical incident, 2 a usage or input error.\n"
        "Thresholds: docs/scan.md, or --print-config.");
    parser.addPositionalArgument("RUN", kRunArgumentHelp);
    parser.addOption({"json", "Print JSON: {\"run\": {...}, \"incidents\": [...]}."});
    parser.addOption({"config", "Scan settings from FILE (JSON object or INI key = value).", "FILE"});
    parser.addOption({"set", "Override one setting (repeatable), e.g. --set spike_decades=1.5.", "KEY=VALUE"});
    parser.addOption({"print-config", "Print the effective settings and exit."});
    parser.addOption(rankOption());
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;

    ScanConfig config;
    if (parser.isSet("config")) {
        QString error;
        if (!loadScanSettingsFile(parser.value("config"), config, error))
            return fail(error);
    }
    for (const QString& assignment : parser.values("set")) {
        const int equals = assignment.indexOf('=');
        if (equals < 0)
            return fail("--set takes KEY=VALUE, not '" + assignment + "'");
        if (Status s = applyScanSetting(config, assignment.left(equals).trimmed().toStdString(),
                                        assignment.mid(equals + 1).trimmed().toStdString());
            !s)
            return fail(fromStd(s.error()));
    }
    if (parser.isSet("print-config")) {
        for (const auto& setting : scanSettings())
            out() << QString("%1 = %2").arg(setting.key, -24).arg(fromStd(scanSettingValue(config, setting.key)), -8)
                  << "  # " << setting.description << "\n";
        return kExitOk;
    }
    QString error;
    const std::unique_ptr<RunSource> reader = openRunArgument(parser, "scan", error);
    if (!reader)
        return fail(error);
    // A multi-rank run is scanned whole unless --rank picks one rank; either way as the window and
    // the report scan it (with the optimizer states read beside the run).
    auto whole = scanRun(*reader, config, {}, parser.isSet("rank") ? RankScope::ShownRank : RankScope::EveryRank);
    if (!whole)
        return fail(fromStd(whole.error()));
    const std::optional<RankScanReport>& ranks = whole->ranks;
    const ScanReport* report = &whole->report;

    if (parser.isSet("json")) {
        QJsonArray incidents;
        for (const auto& incident : report->incidents)
            incidents.append(toJson(incident));
        QJsonArray notes;
        for (const auto& note : report->notes)
            notes.append(fromStd(note));
        const QJsonObject run{{"name", fromStd(report->runName)},
                              {"directory", fromStd(report->directory)},
                              {"first_step", qint64(report->firstStep)},
                              {"last_step", qint64(report->lastStep)}};
        QJsonObject root{{"run", run}, {"incidents", incidents}, {"notes", notes}};
        if (ranks) {
            root["ranks"] = ranksJson(*ranks);
            root["world_size"] = ranks->worldSize;
            root["focus_rank"] = ranks->focusRank;
        }
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
    } else {
        printText(*report);
        if (ranks)
            printRanks(*ranks);
    }
    return report->hasCritical() ? kExitFinding : kExitOk;
}

} // namespace nanscope::cli
