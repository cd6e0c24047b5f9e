#pragma once

// Shared by the subcommands (one file each, app/*Command.cpp): output streams, exit codes,
// argument parsing with --help.

#include <QCommandLineParser>
#include <QString>
#include <QTextStream>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace nanscope {
class RunSource;
}

namespace nanscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitFinding = 1; // a finding that should fail CI (scan: a critical incident)
constexpr int kExitUsage = 2;   // a usage or input error

QTextStream& out();
QTextStream& err();

// Prints "nanscope: message" to stderr and returns kExitUsage.
int fail(const QString& message);

// What a RUN argument may be, for every command's --help.
inline constexpr const char* kRunArgumentHelp =
    "A run: a run directory (run.h5), a Hugging Face Trainer output folder (trainer_state.json, "
    "checkpoint-N/), a Lightning log folder (metrics.csv), TensorBoard event files, a DeepSpeed or "
    "Megatron log, a folder of checkpoints, or one of those files.";

inline QString fromStd(const std::string& s)
{
    return QString::fromStdString(s);
}

// Adds --help, parses, prints help or the error itself. Returns false when the caller should
// return `exitCode` at once.
bool parse(QCommandLineParser& parser, const QStringList& arguments, int& exitCode);

// --rank N: which rank of a multi-rank run a command reads (scan, info, replay).
QCommandLineOption rankOption();
// Shows the parser's --rank of `run` when given. False, with `error` set, when --rank is not a
// number, the run has no ranks, or it has no readable run of that rank.
bool selectRank(const QCommandLineParser& parser, RunSource& run, QString& error);
// The command's one RUN argument opened (openRun), and the rank --rank asks for shown. Null, with
// `error` set (the usage with the help, or what opening said), when it cannot be.
std::unique_ptr<RunSource> openRunArgument(const QCommandLineParser& parser, const QString& command, QString& error);

// The folder that holds one rank's checkpoints and batches, for the commands that read them
// (replay, triage): `runDir` itself for a single-process run; for a multi-rank run's top folder,
// the folder of the parser's --rank, else of the rank that explains `step` (core/scan/RankScan.h:
// rankToExplain), said on stderr. False, with `error` set, when --rank is wrong.
bool resolveRankFolder(const QCommandLineParser& parser, QString& runDir, std::optional<int64_t> step,
                       QString& error);

// The parser's help with the usage line naming the command as typed ("nanscope replay") rather
// than the executable's path.
QString helpText(const QCommandLineParser& parser);

} // namespace nanscope::cli
