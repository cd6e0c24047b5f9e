#pragma once

#include "core/Result.h"

#include <functional>
#include <string>

namespace nanscope {

// Runs `readEverything` in a forked child process and reports how it ended. libhdf5 1.10 crashes
// (SIGSEGV in H5HG_read) or loops on some damaged variable-length string storage, and no check in
// nanscope can prevent a crash inside the library: reading a run's strings first in a child turns
// that crash or hang into an error naming the file, instead of the end of the program.
//
// `readEverything` returns true when it read the file, false when it failed cleanly (the caller
// then repeats the read in this process to get its message). Returns an error only for a crash
// (a signal) or a child still running after `timeoutMs`, which is then killed.
Status probeInChildProcess(const std::string& file, const std::function<bool()>& readEverything, int timeoutMs);

} // namespace nanscope
