#pragma once

#include <QStringList>

// The headless face of nanscope: `nanscope <subcommand> ...`. Each returns the process exit
// code: 0 success, 1 a finding that should fail CI (scan), 2 a usage or input error.
namespace nanscope::cli {

// True when argv names a subcommand (so no GUI and no display are needed).
bool isSubcommand(const QString& word);

int run(const QStringList& arguments);

} // namespace nanscope::cli
