#include "CommandLine.h"

#include "core/DemoRuns.h"
#include "core/RunReader.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

#include <cstdio>
#include <functional>
#include <map>

namespace nanscope::cli {

namespace {

QTextStream& out()
{
    static QTextStream stream(stdout);
    return stream;
}

QTextStream& err()
{
    static QTextStream stream(stderr);
    return stream;
}

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

int fail(const QString& message)
{
    err() << "nanscope: " << message << Qt::endl;
    return kExitUsage;
}

QString fromStd(const std::string& s)
{
    return QString::fromStdString(s);
}

// Parses a subcommand's arguments; prints help or errors itself. Returns false to stop.
bool parse(QCommandLineParser& parser, const QStringList& arguments, int& exitCode)
{
    parser.setApplicationDescription(parser.applicationDescription());
    parser.addHelpOption();
    if (!parser.parse(arguments)) {
        exitCode = fail(parser.errorText() + "\n" + parser.helpText());
        return false;
    }
    if (parser.isSet("help")) {
        out() << parser.helpText();
        exitCode = kExitOk;
        return false;
    }
    return true;
}

int runInfo(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Show what a run directory holds: tables, row counts, checkpoints, batches.");
    parser.addPositionalArgument("RUN_DIR", "The run directory (holding run.h5).");
    parser.addOption({"json", "Print JSON instead of text."});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("info takes one RUN_DIR\n" + parser.helpText());

    auto reader = RunReader::open(parser.positionalArguments().first().toStdString());
    if (!reader)
        return fail(fromStd(reader.error()));
    const RunInfo& info = (*reader)->info();

    auto steps = [](const std::map<int64_t, std::string>& files) {
        QJsonArray array;
        for (const auto& [step, path] : files)
            array.append(qint64(step));
        return array;
    };
    if (parser.isSet("json")) {
        QJsonObject groups;
        for (const auto& table : info.tables) {
            QJsonObject group{{"rows", qint64(table.rows)}};
            QJsonArray columns;
            for (const auto& d : table.datasets)
                columns.append(fromStd(d));
            group["columns"] = columns;
            if (!table.names.empty()) {
                QJsonArray names;
                for (const auto& n : table.names)
                    names.append(fromStd(n));
                group["names"] = names;
            }
            if (!table.kinds.empty()) {
                QJsonArray kinds;
                for (const auto& k : table.kinds)
                    kinds.append(fromStd(k));
                group["kinds"] = kinds;
            }
            groups[fromStd(table.name)] = group;
        }
        QJsonObject attributes;
        for (const auto& [name, value] : info.attributes)
            attributes[fromStd(name)] = fromStd(value);
        QJsonObject root{{"run_name", fromStd(info.runName)},
                         {"format_version", info.formatVersion},
                         {"attributes", attributes},
                         {"groups", groups},
                         {"checkpoints", steps(info.checkpoints)},
                         {"batches", steps(info.batches)}};
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
        return kExitOk;
    }

    out() << "run        " << fromStd(info.runName) << "\n";
    out() << "log        " << fromStd(info.logPath) << (info.openedForSwmr ? "  (SWMR)" : "") << "\n";
    for (const auto& [name, value] : info.attributes)
        if (name != "run_name" && name != "format")
            out() << QString("%1 %2\n").arg(fromStd(name), -10).arg(fromStd(value));
    out() << "\n" << QString("%1 %2 %3  %4\n").arg("group", -12).arg("rows", 8).arg("cols", 5).arg("datasets");
    for (const auto& t : info.tables) {
        QStringList datasets;
        for (const auto& d : t.datasets)
            datasets << fromStd(d);
        const auto& steps = (*reader)->steps(t.name);
        QString span = steps.empty() ? QString("-") : QString("steps %1..%2").arg(steps.front()).arg(steps.back());
        out() << QString("%1 %2 %3  %4  [%5]\n")
                     .arg("/" + fromStd(t.name), -12)
                     .arg(t.rows, 8)
                     .arg(t.names.empty() ? QString("-") : QString::number(t.names.size()), 5)
                     .arg(datasets.join(", "))
                     .arg(span);
    }
    auto list = [](const std::map<int64_t, std::string>& files) {
        QStringList s;
        for (const auto& [step, path] : files)
            s << QString::number(step);
        return s.isEmpty() ? QString("none") : s.join(", ");
    };
    out() << "\ncheckpoints " << list(info.checkpoints) << "\n";
    out() << "batches     " << list(info.batches) << "\n";
    return kExitOk;
}

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
        return fail("demo takes one OUT_DIR\n" + parser.helpText());
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
        const bool quiet = parser.isSet("quiet");
        Status status = writeDemoRun(dir.toStdString(), scenario, [&](double fraction, const std::string&) {
            const int percent = int(fraction * 100);
            if (!quiet && percent / 10 != lastPercent / 10) {
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
            out() << QString("\rwrote    %1 - %2").arg(dir, fromStd(scenario.description)) << Qt::endl;
    }
    return kExitOk;
}

struct Subcommand
{
    const char* name;
    const char* summary;
    std::function<int(const QStringList&)> run;
};

const std::vector<Subcommand>& subcommands()
{
    static const std::vector<Subcommand> commands{
        {"info", "what a run directory holds", runInfo},
        {"demo", "train small models and write the demo runs", runDemo},
    };
    return commands;
}

void printUsage(QTextStream& stream)
{
    stream << "nanscope " << NANSCOPE_VERSION << " - the numerical health of deep-learning training\n\n"
           << "Usage:\n"
           << "  nanscope [RUN_DIR] [--screenshot FILE.png]   open the desktop inspector\n"
           << "  nanscope <command> [options]                 run headless\n\n"
           << "Commands:\n";
    for (const auto& c : subcommands())
        stream << QString("  %1 %2\n").arg(c.name, -8).arg(c.summary);
    stream << "\n'nanscope <command> --help' describes a command.\n";
}

} // namespace

bool isSubcommand(const QString& word)
{
    if (word == "help" || word == "--help" || word == "-h" || word == "--version")
        return true;
    for (const auto& c : subcommands())
        if (word == c.name)
            return true;
    return false;
}

int run(const QStringList& arguments)
{
    const QString command = arguments.value(1);
    if (command == "help" || command == "--help" || command == "-h") {
        printUsage(out());
        return kExitOk;
    }
    if (command == "--version") {
        out() << "nanscope " << NANSCOPE_VERSION << Qt::endl;
        return kExitOk;
    }
    for (const auto& c : subcommands()) {
        if (command == c.name) {
            QStringList rest = arguments.mid(2);
            rest.prepend(QString("nanscope %1").arg(c.name));
            return c.run(rest);
        }
    }
    printUsage(err());
    return kExitUsage;
}

} // namespace nanscope::cli
