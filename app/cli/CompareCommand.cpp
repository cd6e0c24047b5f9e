#include "app/cli/CliSupport.h"
#include "app/codecs/CompareJson.h"
#include "app/cli/Subcommands.h"

#include "core/compare/RunComparison.h"
#include "core/open/CompareRunSources.h"
#include "core/open/OpenRun.h"

#include <QJsonDocument>

#include <algorithm>
#include <memory>
#include <vector>

namespace nanscope::cli {

namespace {

// Runs are named A, B, C... in the text, with the path each letter stands for at the top.
QString letter(size_t run)
{
    return run < 26 ? QString(QChar('A' + int(run))) : QString("R%1").arg(run + 1);
}

std::string join(const std::vector<std::string>& names)
{
    std::string joined;
    for (const std::string& name : names)
        joined += (joined.empty() ? "" : ", ") + name;
    return joined;
}

int countAt(const ScanReport& scan, Severity severity)
{
    int count = 0;
    for (const Incident& incident : scan.incidents)
        count += incident.severity == severity;
    return count;
}

void printText(const RunComparison& comparison)
{
    out() << "runs (each compared with A):\n";
    for (size_t i = 0; i < comparison.runs.size(); ++i) {
        const ComparedRun& run = comparison.runs[i];
        out() << QString("  %1  %2\n      %3, steps %4..%5, %6 critical, %7 warning incidents\n")
                     .arg(letter(i), fromStd(run.label), fromStd(run.format))
                     .arg(run.scan.firstStep)
                     .arg(run.scan.lastStep)
                     .arg(countAt(run.scan, Severity::Critical))
                     .arg(countAt(run.scan, Severity::Warning));
    }
    for (const RunPairComparison& pair : comparison.pairs) {
        const std::string a = letter(0).toStdString();
        const std::string b = letter(pair.otherRun).toStdString();
        const SeriesDivergence* first = pair.firstDivergence();
        out() << "\n" << fromStd(b) << " against A: ";
        if (first)
            out() << "they diverge first at step " << *first->step << " (" << fromStd(first->series) << ")\n";
        else
            out() << "no series diverges\n";
        int nameWidth = 8;
        for (const SeriesDivergence& d : pair.series)
            nameWidth = std::max(nameWidth, int(d.series.size()));
        out() << QString("  %1 %2  %3\n").arg("series", -nameWidth).arg("steps", -13).arg("first departure");
        for (const SeriesDivergence& d : pair.series) {
            const std::string leaving = d.leavingRun == 0 ? a : b;
            const std::string band = d.leavingRun == 0 ? b : a;
            out() << QString("  %1 %2  %3\n")
                         .arg(fromStd(d.series), -nameWidth)
                         .arg(QString("%1..%2").arg(d.firstCommonStep).arg(d.lastCommonStep), -13)
                         .arg(fromStd(divergenceWords(d, leaving, band)));
        }
        if (!pair.onlyInReference.empty())
            out() << "  only in A: " << fromStd(join(pair.onlyInReference)) << "\n";
        if (!pair.onlyInOther.empty())
            out() << "  only in " << fromStd(b) << ": " << fromStd(join(pair.onlyInOther)) << "\n";
        if (pair.incidents.empty()) {
            out() << "  incidents: none in either run\n";
        } else {
            out() << "  incidents:\n";
            for (const IncidentDifference& d : pair.incidents)
                out() << "    " << fromStd(incidentDifferenceWords(d, a, b)) << "\n";
        }
        for (const std::string& note : pair.notes)
            out() << "  note: " << fromStd(note) << "\n";
    }
}

} // namespace

int runCompare(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Compare two or more runs with the first: for every series they both log, the first step where one "
        "run leaves the other's noise band (rolling median +- 4 robust sigmas, for at least 3 logged points) "
        "or 'never'; and their incidents: only in one run, or in both with the onset shift and what differs.\n"
        "Exit status: 0 compared, 2 a usage or input error (the message names the run).\n"
        "Method: docs/compare.md.");
    parser.addPositionalArgument("RUN", kRunArgumentHelp, "RUN RUN [RUN...]");
    parser.addOption({"json", "Print JSON: {\"runs\": [...], \"comparisons\": [...], \"settings\": {...}}."});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    const QStringList paths = parser.positionalArguments();
    if (paths.size() < 2)
        return fail("compare takes two or more RUNs\n" + helpText(parser));

    // Opened one after the other: opening a run.h5 first reads its strings in a forked child, and
    // a fork while another thread holds HDF5's lock would leave that child waiting for ever.
    std::vector<std::unique_ptr<RunSource>> sources;
    std::vector<const RunSource*> views;
    std::vector<std::string> labels;
    for (const QString& path : paths) {
        auto source = openRun(path.toStdString());
        if (!source)
            return fail(QString("cannot open run %1: %2").arg(path, fromStd(source.error())));
        views.push_back(source->get());
        labels.push_back(path.toStdString());
        sources.push_back(std::move(*source));
    }
    auto comparison = compareRunSources(views, labels);
    if (!comparison)
        return fail(fromStd(comparison.error()));
    if (parser.isSet("json"))
        out() << QJsonDocument(comparisonToJson(*comparison)).toJson(QJsonDocument::Indented);
    else
        printText(*comparison);
    return kExitOk;
}

} // namespace nanscope::cli
