#include "core/run/RunFileProbe.h"

#include "core/run/ChildProcessCall.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include <fstream>
#include <new>

#include <poll.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nanscope {

namespace {

// What the child writes to the pipe after each file.
constexpr char kChildRead = 'r';        // read, or failed cleanly (the parent's own read names why)
constexpr char kChildOutOfMemory = 'm'; // ran out of the capped address space

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

std::vector<Status> probeEachInChildProcess(const std::vector<std::string>& files,
                                            const std::function<bool(size_t)>& readEverything, int timeoutMs)
{
    std::vector<Status> statuses(files.size(), Status::success());
#if defined(__SANITIZE_ADDRESS__)
    // The sanitizer build reads in this process: ASan's allocator can deadlock a child forked from
    // a multi-threaded process (the window's), and that build is for finding nanscope's own bugs.
    (void)readEverything;
    (void)timeoutMs;
    return statuses;
#endif
    size_t next = 0; // the first file no child has finished with
    while (next < files.size()) {
        int channel[2];
        if (pipe(channel) != 0)
            return statuses; // no descriptor to spare: read in this process, as before the probe existed
        const pid_t child = fork();
        if (child < 0) { // no process to spare: likewise
            close(channel[0]);
            close(channel[1]);
            return statuses;
        }
        if (child == 0) {
            // The child only reads and leaves with _exit: no atexit handlers, no flushing of the
            // parent's buffers, no destructors of objects it does not own.
            close(channel[0]);
            capAddressSpace();
            for (size_t i = next; i < files.size(); ++i) {
                char outcome = kChildRead;
                try {
                    (void)readEverything(i);
                } catch (const std::bad_alloc&) {
                    outcome = kChildOutOfMemory;
                } catch (...) {
                }
                while (write(channel[1], &outcome, 1) < 0 && errno == EINTR) {
                }
                if (outcome == kChildOutOfMemory)
                    _exit(0); // an allocator that failed once is not trusted with the next file
            }
            _exit(0);
        }
        close(channel[1]);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        bool childGone = false;
        while (next < files.size() && !childGone) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd ready{channel[0], POLLIN, 0};
            const int polled = poll(&ready, 1, int(std::max<int64_t>(0, left.count())));
            if (polled < 0 && errno == EINTR)
                continue;
            if (polled == 0) { // the file the child is on hangs libhdf5
                kill(child, SIGKILL);
                statuses[next] = Error{files[next] + ": reading it did not finish within " +
                                       std::to_string(timeoutMs / 1000) +
                                       " s; the file is probably corrupted (damaged HDF5 metadata or string storage)"};
                ++next;
                childGone = true;
                break;
            }
            char outcome = 0;
            const ssize_t got = polled > 0 ? read(channel[0], &outcome, 1) : -1;
            if (got < 0 && errno == EINTR)
                continue;
            if (got == 1) {
                if (outcome == kChildOutOfMemory) {
                    statuses[next] = Error{files[next] + ": reading it needed more than " +
                                           std::to_string(kProbeMemoryHeadroom >> 20) +
                                           " MiB; the file is corrupted (a damaged size field in its HDF5 metadata or string storage)"};
                    childGone = true;
                }
                ++next;
                deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
                continue;
            }
            // The pipe closed before every file was reported: the child died on the file it was on.
            if (got < 0) // the pipe itself failed: the child may still be running, and is not waited for
                kill(child, SIGKILL);
            int status = 0;
            if (waitpid(child, &status, 0) == child && WIFSIGNALED(status))
                statuses[next] = Error{files[next] + ": reading it " + crashedWording(WTERMSIG(status)) +
                                       " inside the HDF5 library; the file is corrupted (damaged HDF5 metadata or "
                                       "string storage)"};
            // else not ours to wait for (a SIGCHLD handler reaped it): nothing learned of that file
            ++next;
            close(channel[0]);
            channel[0] = -1;
            break;
        }
        if (channel[0] >= 0) {
            close(channel[0]);
            int status = 0;
            waitpid(child, &status, 0); // it has exited or been killed: reap it
        }
    }
    return statuses;
}

} // namespace nanscope
