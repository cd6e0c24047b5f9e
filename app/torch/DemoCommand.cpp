#include "app/cli/CliSupport.h"
#include "app/cli/Subcommands.h"

#include "core/torch/DemoRuns.h"

#include <QDir>

#include <cstdio>
#include <unistd.h>
#include <QFileInfo>

namespace nanscope::cli {

int runDemo(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Train small LibTorch models and write demo run directories, one per failure nanscope finds:\n"
        "healthy, sudden-blowup, gradual-blowup, division-by-zero, batchnorm-poisoned.");
    parser.addPositionalArgument("OUT_DIR", "Folder to write the runs into (OUT_DIR/<name>/).");
    parser.addOption({"only", "Write only the run NAME (repeatable).", "NAME"});
    parser.addOption({"force", "Rewrite runs that already exist (default: keep them)."});
    parser.addOption({"quiet", "No progress output."});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("demo takes one OUT_DIR\n" + helpText(parser));
    const QString outDir = parser.positionalArguments().first();
    const QStringList only = parser.values("only");
    QStringList known;
    for (const auto& s : demoScenarios())
        known << fromStd(s.name);
    for (const auto& name : only)
        if (!known.contains(name))
            return fail(QString("no demo run named '%1'; choose from: %2").arg(name, known.join(", ")));

    for (const auto& scenario : demoScenarios()) {
        const QString name = fromStd(scenario.name);
        if (!only.isEmpty() && !only.contains(name))
            continue;
        const QString dir = QDir(outDir).filePath(name);
        if (QFileInfo::exists(QDir(dir).filePath("run.h5"))) {
            if (!parser.isSet("force")) {
                if (!parser.isSet("quiet"))
                    out() << "kept     " << dir << " (exists; --force rewrites it)" << Qt::endl;
                continue;
            }
            QDir(dir).removeRecursively();
        }
        int lastPercent = -1;
        // A bar redrawn with \r on a terminal; in a log, one line per run.
        const bool quiet = parser.isSet("quiet");
        const bool showBar = !quiet && isatty(fileno(stdout));
        Status status = writeDemoRun(dir.toStdString(), scenario, [&](double fraction, const std::string&) {
            const int percent = int(fraction * 100);
            if (showBar && percent / 10 != lastPercent / 10) {
                out() << QString("\rwriting  %1 %2%").arg(dir).arg(percent, 3) << Qt::flush;
                lastPercent = percent;
            }
            return true;
        });
        if (!status) {
            out() << Qt::endl;
            QDir(dir).removeRecursively(); // our own output, half written: never leave it behind
            return fail(fromStd(status.error()));
        }
        if (!quiet)
            out() << (showBar ? "\r" : "") << QString("wrote    %1 - %2").arg(dir, fromStd(scenario.description)) << Qt::endl;
    }
    return kExitOk;
}


} // namespace nanscope::cli
