#pragma once

#include <QStringList>

// The headless face of nanscope: `nanscope <subcommand> ...`. Each returns the process exit
// code: 0 success, 1 a finding that should fail CI (scan), 2 a usage or input error.
namespace nanscope::cli {

// True when argv names a subcommand (so no GUI and no display are needed).
bool isSubcommand(const QString& word);

int run(const QStringList& arguments);

// The commands that run a model (replay, demo) are compiled into nanscope-torch only, the one
// program that loads LibTorch (app/torch/TorchMain.cpp); it provides them here before run().
// In `nanscope`, which never loads LibTorch, run() hands such a command to nanscope-torch
// (app/cli/LibTorchProgram.h).
using CommandFunction = int (*)(const QStringList& arguments);
struct LibTorchCommands
{
    CommandFunction replay = nullptr;
    CommandFunction demo = nullptr;
};
void provideLibTorchCommands(const LibTorchCommands& commands);

} // namespace nanscope::cli
