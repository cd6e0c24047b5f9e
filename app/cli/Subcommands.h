#pragma once

#include <QStringList>

// One function per subcommand, each in its own app/<Name>Command.cpp; CommandLine.cpp lists them.
// `arguments` starts with "nanscope <command>" and then the user's arguments.
namespace nanscope::cli {

int runInfo(const QStringList& arguments);
int runDemo(const QStringList& arguments);
int runScan(const QStringList& arguments);
int runReplay(const QStringList& arguments);
int runTriage(const QStringList& arguments);
int runReport(const QStringList& arguments);
int runStats(const QStringList& arguments);
int runDiff(const QStringList& arguments);
int runCompare(const QStringList& arguments);
int runImport(const QStringList& arguments);

} // namespace nanscope::cli
