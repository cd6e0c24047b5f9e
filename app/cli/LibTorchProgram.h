#pragma once

#include <QString>
#include <QStringList>

// `nanscope` never loads LibTorch: starting it costs 16 ms and tens of MB where LibTorch costs a
// second and hundreds of MB (issue 54). The commands that run a model are done by nanscope-torch,
// the same program with LibTorch linked in, installed beside it. `nanscope replay ...` replaces
// itself with `nanscope-torch replay ...` (exec: same process, same arguments, output and exit
// code), so the window's child programs, scripts and users call `nanscope` alone.
namespace nanscope::cli {

// Where nanscope-torch is: beside the running program (the build's bin/ or the install's), or
// $NANSCOPE_TORCH_PROGRAM when set (tests, a build of one's own).
QString libTorchProgram();

// Whether `nanscope stats` needs LibTorch's kernels: --device cuda, or --device auto (the
// default) on a machine whose NVIDIA driver lists a GPU. Without a GPU, auto means the CPU kernel,
// which nanscope has without LibTorch.
bool statsNeedsLibTorch(const QStringList& commandArguments);

// Replaces this process with nanscope-torch, given the same arguments (arguments[0] is this
// program). Returns only when that cannot be done: kExitUsage, after a message naming the program
// that is missing or could not start.
int runInLibTorchProgram(const QStringList& arguments);

} // namespace nanscope::cli
