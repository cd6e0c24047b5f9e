#pragma once

#include <QString>
#include <QStringList>

// `nanscope` never loads LibTorch: starting it costs 16 ms and tens of MB where LibTorch costs a
// second and hundreds of MB. The commands that run a model are done by nanscope-torch,
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

// The folder holding the libtorch.so that nanscope-torch was built against (LibTorch's C++ has no
// stable ABI: the same version is needed), for the loader: $NANSCOPE_TORCH_LIBRARY_DIR when set;
// else the build's own (a build tree, or an install on the machine that built it); else the torch
// of the `python3` on PATH, found without importing it, when its version is the one built against.
// Empty, with `error` saying what to install, when there is none.
QString torchLibraryFolder(QString& error);
// The same search with `builtFolder` in place of the build's own folder (empty: none).
QString torchLibraryFolder(QString& error, const QString& builtFolder);

// nanscope-torch calls this first: the loader has read the library path the hand-over set, and
// the programs it starts (the eager replay's Python, with its own torch) must not inherit it.
void restoreLibraryPathAfterHandover();

// Replaces this process with nanscope-torch, given the same arguments (arguments[0] is this
// program), with torchLibraryFolder() on the loader's path. Returns only when that cannot be done:
// kExitUsage, after a message naming the program that is missing or the torch to install.
int runInLibTorchProgram(const QStringList& arguments);

} // namespace nanscope::cli
