#pragma once

#include "core/Result.h"

#include <cstdint>
#include <functional>
#include <string>

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

Status probeInChildProcess(const std::string& file, const std::function<bool()>& readEverything, int timeoutMs);

} // namespace nanscope
