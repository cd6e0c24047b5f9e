#include "app/children/ChildProgram.h"
#include "app/cli/CliSupport.h"
#include "app/codecs/ReplayJson.h"
#include "app/codecs/ScanSettingsFile.h"
#include "app/report/IncidentReport.h"
#include "app/cli/Subcommands.h"

#include <QFile>

namespace nanscope::cli {

int runReport(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Write the incident report of a run: summary, timeline, each critical incident with its evidence, plot,\n"
        "first bad layer, BatchNorm state, replay result, cause and fixes, and the environment.\n"
        "The format follows the extension: .html (self-contained), .pdf, .md or .json.\n"
        "Replaying a saved step runs the checkpoint's TorchScript code (in a child process); --no-replay skips it.");
    parser.addPositionalArgument("RUN", kRunArgumentHelp);
    parser.addOption({{"o", "output"}, "The report file to write.", "FILE"});
    parser.addOption({"no-replay", "Do not replay saved steps."});
    parser.addOption({"compare", "Add a section comparing RUN with OTHER_RUN: where they diverge, how their "
                                 "incidents differ, an overlay plot (repeatable).", "OTHER_RUN"});
    parser.addOption({"progress-lines", "Report progress as 'nanscope-progress PERCENT WHAT' lines on standard "
                                        "error (the window's progress bar reads them)."});
    parser.addOption({"rank", "In a multi-rank run, replay and triage on rank N's saved steps (default: each "
                              "incident on the rank it was found on).", "N"});
    parser.addOption({"replayed", "A replay of one of RUN's steps already run (`nanscope replay --json` output, as "
                                  "trained, training mode): the report uses it for that step instead of replaying it "
                                  "again. May be given more than once.", "FILE"});
    parser.addOption({"config", "Scan settings from FILE (JSON object or INI key = value; see `nanscope scan --help`): "
                                "the scan and the BatchNorm judgement use them.", "FILE"});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1 || !parser.isSet("output"))
        return fail("report takes RUN and -o FILE\n" + helpText(parser));
    IncidentReportOptions options;
    options.replay = !parser.isSet("no-replay");
    options.compareWith = parser.values("compare");
    if (parser.isSet("rank")) {
        bool ok = false;
        options.rank = parser.value("rank").toInt(&ok);
        if (!ok || options.rank < 0)
            return fail("--rank takes a rank number, not '" + parser.value("rank") + "'");
    }
    for (const QString& file : parser.values("replayed")) {
        QFile in(file);
        if (!in.open(QIODevice::ReadOnly))
            return fail(file + ": cannot read it (" + in.errorString() + ")");
        ReplayReport known = parseReplayJson(in.readAll());
        if (!known.error.isEmpty())
            return fail(file + ": not a replay (" + known.error + ")");
        if (known.mode != "train")
            return fail(file + ": a replay in " + known.mode + " mode; the report replays in training mode");
        options.replayed.push_back(std::move(known));
    }
    if (parser.isSet("config")) {
        QString error;
        if (!loadScanSettingsFile(parser.value("config"), options.scanConfig, error))
            return fail(error);
    }
    ProgressCallback progress;
    if (parser.isSet("progress-lines"))
        progress = [](double fraction, const std::string& what) {
            err() << QString::fromUtf8(childProgressLine(fraction, fromStd(what)));
            err().flush();
            return true;
        };
    Status status = writeIncidentReport(parser.positionalArguments().first(), parser.value("output"), options, progress);
    if (!status)
        return fail(fromStd(status.error()));
    out() << "wrote " << parser.value("output") << Qt::endl;
    return kExitOk;
}

} // namespace nanscope::cli
