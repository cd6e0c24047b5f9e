#include "core/run/RunFileProbe.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include <fstream>
#include <new>

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nanscope {

namespace {

constexpr int kChildReadFailed = 3;
constexpr int kChildOutOfMemory = 4;

// The child's address space: what it inherited plus the headroom. Virtual size, not resident: the
// parent may have reserved much it never touched (thread stacks, LibTorch's mappings).
void capAddressSpace()
{
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    if (!(statm >> pages))
        return;
    const uint64_t limit = pages * uint64_t(sysconf(_SC_PAGESIZE)) + kProbeMemoryHeadroom;
    rlimit cap{rlim_t(limit), rlim_t(limit)};
    setrlimit(RLIMIT_AS, &cap);
}

} // namespace

Status probeInChildProcess(const std::string& file, const std::function<bool()>& readEverything, int timeoutMs)
{
#if defined(__SANITIZE_ADDRESS__)
    // The sanitizer build reads in this process: ASan's allocator can deadlock a child forked from
    // a multi-threaded process (the window's), and that build is for finding nanscope's own bugs.
    (void)file;
    (void)readEverything;
    (void)timeoutMs;
    return Status::success();
#endif
    const pid_t child = fork();
    if (child < 0) // no process to spare: read in this process, as before the probe existed
        return Status::success();
    if (child == 0) {
        // The child only reads and leaves with _exit: no atexit handlers, no flushing of the
        // parent's buffers, no destructors of objects it does not own.
        capAddressSpace();
        int code = kChildReadFailed;
        try {
            code = readEverything() ? 0 : kChildReadFailed;
        } catch (const std::bad_alloc&) {
            code = kChildOutOfMemory;
        } catch (...) {
            code = kChildReadFailed;
        }
        _exit(code);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    int status = 0;
    for (;;) {
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child)
            break;
        if (done < 0) // not ours to wait for (a SIGCHLD handler reaped it): nothing learned
            return Status::success();
        if (std::chrono::steady_clock::now() >= deadline) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            return Error{file + ": reading it did not finish within " + std::to_string(timeoutMs / 1000) +
                         " s; the file is probably corrupted (damaged HDF5 metadata or string storage)"};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFSIGNALED(status))
        return Error{file + ": reading it crashed the HDF5 library (" + strsignal(WTERMSIG(status)) +
                     "); the file is corrupted (damaged HDF5 metadata or string storage)"};
    if (WIFEXITED(status) && WEXITSTATUS(status) == kChildOutOfMemory)
        return Error{file + ": reading it needed more than " + std::to_string(kProbeMemoryHeadroom >> 20) +
                     " MiB; the file is corrupted (a damaged size field in its HDF5 metadata or string storage)"};
    return Status::success();
}

} // namespace nanscope
