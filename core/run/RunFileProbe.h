#pragma once

#include "core/Result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nanscope {

// Runs `readEverything` in a forked child process and reports how it ended. libhdf5 1.10 crashes
// (SIGSEGV in H5HG_read) or loops on some damaged variable-length string storage, and no check in
// nanscope can prevent a crash inside the library: reading a run's strings first in a child turns
// that crash or hang into an error naming the file, instead of the end of the program.
//
// `readEverything` returns true when it read the file, false when it failed cleanly (the caller
// then repeats the read in this process to get its message). The child's address space is capped
// at kProbeMemoryHeadroom above the parent's: a read that would allocate more (libhdf5 believing a
// damaged size field) fails there, by std::bad_alloc or a failed allocation inside libhdf5, and
// `readEverything` reports that by throwing std::bad_alloc. Returns an error for a crash (a
// signal), for a child that ran out of its memory, and for a child still running after `timeoutMs`,
// which is then killed. The caps are a last line of defence: the readers' own size checks refuse
// the damage found so far before anything allocates, so no outcome depends on which limit a given
// machine reaches first.
constexpr uint64_t kProbeMemoryHeadroom = uint64_t(1) << 30;

// Several files (the ranks of a multi-rank run; a single run is one) are probed in one child that
// reads them in turn: a fork of a process with LibTorch mapped costs tens of milliseconds of
// page-table copying and copy-on-write faults, most of the time of opening a run of 64 ranks. The
// child tells the parent, through a pipe, each file it has read; a file that crashes, hangs or
// exhausts the child gets its error, and a fresh child goes on with the next file, so one damaged file is named and the others are still read. Each file has its own
// `timeoutMs`, counted from the end of the one before. Returns one status per file, in order.
std::vector<Status> probeEachInChildProcess(const std::vector<std::string>& files,
                                            const std::function<bool(size_t)>& readEverything, int timeoutMs);

} // namespace nanscope
