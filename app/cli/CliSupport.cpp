#include "app/cli/CliSupport.h"

#include "core/run/RankSet.h"
#include "core/scan/RankScan.h"
#include "core/open/MultiRankRun.h"
#include "core/open/OpenRun.h"

#include <QCoreApplication>

namespace nanscope::cli {

namespace {
QString& commandName()
{
    static QString name = "nanscope";
    return name;
}
} // namespace

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

int fail(const QString& message)
{
    err() << "nanscope: " << message << Qt::endl;
    return kExitUsage;
}

QString helpText(const QCommandLineParser& parser)
{
    QString text = parser.helpText();
    // Qt writes the executable's path, which may hold spaces, after "Usage: ".
    const QString qtUsage = "Usage: " + QCoreApplication::arguments().value(0);
    if (!QCoreApplication::arguments().isEmpty() && text.startsWith(qtUsage))
        text.replace(0, qtUsage.size(), "Usage: " + commandName());
    return text;
}

bool parse(QCommandLineParser& parser, const QStringList& arguments, int& exitCode)
{
    if (!arguments.isEmpty())
        commandName() = arguments.first();
    parser.addHelpOption();
    if (!parser.parse(arguments)) {
        exitCode = fail(parser.errorText() + "\n" + helpText(parser));
        return false;
    }
    if (parser.isSet("help")) {
        out() << helpText(parser);
        exitCode = kExitOk;
        return false;
    }
    return true;
}

QCommandLineOption rankOption()
{
    return {"rank", "In a multi-rank run (ranks.json, rank_NNNNN/), read rank N (default: rank 0; scan: every rank).",
            "N"};
}

bool selectRank(const QCommandLineParser& parser, RunSource& run, QString& error)
{
    if (!parser.isSet("rank"))
        return true;
    bool ok = false;
    const int rank = parser.value("rank").toInt(&ok);
    if (!ok || rank < 0) {
        error = "--rank takes a rank number, not '" + parser.value("rank") + "'";
        return false;
    }
    RankSet* ranks = run.rankSet();
    if (!ranks) {
        error = "--rank " + parser.value("rank") + ": " + fromStd(run.info().directory) +
                " is a single-process run, not a multi-rank run";
        return false;
    }
    if (Status s = ranks->selectRank(rank); !s) {
        error = fromStd(s.error());
        return false;
    }
    return true;
}

std::unique_ptr<RunSource> openRunArgument(const QCommandLineParser& parser, const QString& command, QString& error)
{
    if (parser.positionalArguments().size() != 1) {
        error = command + " takes one RUN\n" + helpText(parser);
        return nullptr;
    }
    auto reader = openRun(parser.positionalArguments().first().toStdString());
    if (!reader) {
        error = QString::fromStdString(reader.error());
        return nullptr;
    }
    if (!selectRank(parser, **reader, error))
        return nullptr;
    return std::move(*reader);
}

bool resolveRankFolder(const QCommandLineParser& parser, QString& runDir, std::optional<int64_t> step,
                       QString& error)
{
    const bool multiRank = isMultiRankRun(runDir.toStdString());
    if (!multiRank && !parser.isSet("rank"))
        return true;
    if (!multiRank) {
        error = "--rank " + parser.value("rank") + ": " + runDir + " is a single-process run, not a multi-rank run";
        return false;
    }
    auto ranks = openMultiRankRun(runDir.toStdString());
    if (!ranks) {
        error = fromStd(ranks.error());
        return false;
    }
    if (parser.isSet("rank")) {
        if (!selectRank(parser, **ranks, error))
            return false;
    } else {
        std::string why;
        const int rank = scan::rankToExplain(**ranks, step, &why);
        if (Status s = (*ranks)->selectRank(rank); !s) {
            error = fromStd(s.error());
            return false;
        }
        err() << "nanscope: " << runDir << " is a multi-rank run: reading rank " << rank << " (" << fromStd(why)
              << "; --rank N chooses another)\n";
        err().flush();
    }
    runDir = fromStd((*ranks)->info().directory);
    return true;
}

} // namespace nanscope::cli
