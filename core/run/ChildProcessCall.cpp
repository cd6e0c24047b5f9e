#include "core/run/ChildProcessCall.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nanscope {

namespace {

// Frames on the pipe: one byte of kind, eight of payload size, the payload.
constexpr char kProgressFrame = 'p'; // a double fraction, then the text
constexpr char kResultFrame = 'r';
constexpr char kErrorFrame = 'e';
constexpr int kSilenceLimitMs = 300000;

bool writeAll(int fd, const char* data, size_t size)
{
    while (size > 0) {
        const ssize_t written = ::write(fd, data, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        data += written;
        size -= size_t(written);
    }
    return true;
}

bool writeFrame(int fd, char kind, const std::string& payload)
{
    const uint64_t size = payload.size();
    char header[9];
    header[0] = kind;
    std::memcpy(header + 1, &size, sizeof size);
    return writeAll(fd, header, sizeof header) && writeAll(fd, payload.data(), payload.size());
}

// Reads exactly `size` bytes; false at the end of the pipe.
bool readAll(int fd, char* data, size_t size)
{
    while (size > 0) {
        const ssize_t got = ::read(fd, data, size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        data += got;
        size -= size_t(got);
    }
    return true;
}

std::string describeEnd(int status)
{
    if (WIFSIGNALED(status))
        return crashedWording(WTERMSIG(status));
    return "ended without an answer (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
}

} // namespace

std::string crashedWording(int signalNumber)
{
    return std::string("crashed (") + strsignal(signalNumber) + ")";
}

Result<std::string> computeInChildProcess(const std::string& what, const ChildComputation& compute,
                                          const ProgressCallback& progress)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)what;
    return compute(progress);
#endif
    // From the pipe to the parent's close of its write end, one call at a time: a child forked
    // by another thread in between (a multi-rank scan reads each rank's optimizer state on a
    // thread of its own) would inherit that write end, and a crashed child's parent would then
    // see no end of the pipe until the other child exits.
    static std::mutex forkMutex;
    std::unique_lock<std::mutex> forking(forkMutex);
    int fds[2];
    if (pipe(fds) != 0) {
        forking.unlock();
        return compute(progress); // no pipe to spare: compute here, as before the child existed
    }
    const pid_t child = fork();
    if (child < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        forking.unlock();
        return compute(progress);
    }
    if (child == 0) {
        // The child only computes, writes its answer and leaves with _exit: no atexit handlers,
        // no flushing of the parent's buffers, no destructors of objects it does not own.
        ::close(fds[0]);
        const int out = fds[1];
        int code = 0;
        try {
            auto answer = compute([out](double fraction, const std::string& text) {
                std::string payload(sizeof fraction, '\0');
                std::memcpy(payload.data(), &fraction, sizeof fraction);
                payload += text;
                return writeFrame(out, kProgressFrame, payload); // a closed pipe: the parent cancelled
            });
            if (answer)
                writeFrame(out, kResultFrame, *answer);
            else
                writeFrame(out, kErrorFrame, answer.error());
        } catch (const std::exception& e) {
            writeFrame(out, kErrorFrame, what + ": cannot be read (" + e.what() + ")");
        } catch (...) {
            code = 3;
        }
        _exit(code);
    }
    ::close(fds[1]);
    forking.unlock();
    const int in = fds[0];
    std::optional<Result<std::string>> answer;
    bool cancelled = false;
    bool silent = false;
    for (;;) {
        // A child that says nothing for this long is stuck (a lock held at fork time, a parser
        // loop): it is ended. Progress comes at least once per file, so a working child speaks.
        pollfd wait{in, POLLIN, 0};
        int ready = 0;
        while ((ready = ::poll(&wait, 1, kSilenceLimitMs)) < 0 && errno == EINTR) {
        }
        if (ready == 0) {
            silent = true;
            break;
        }
        char header[9];
        if (!readAll(in, header, sizeof header))
            break;
        uint64_t size = 0;
        std::memcpy(&size, header + 1, sizeof size);
        std::string payload;
        try {
            payload.resize(size_t(size));
        } catch (const std::exception&) {
            break; // a garbled frame: the child is ended below
        }
        if (!readAll(in, payload.data(), payload.size()))
            break;
        if (header[0] == kProgressFrame && payload.size() >= sizeof(double)) {
            double fraction = 0;
            std::memcpy(&fraction, payload.data(), sizeof fraction);
            if (!reportProgress(progress, fraction, payload.substr(sizeof fraction))) {
                cancelled = true;
                break;
            }
        } else if (header[0] == kResultFrame) {
            answer = std::move(payload);
        } else if (header[0] == kErrorFrame) {
            answer = Error{std::move(payload)};
        }
    }
    ::close(in);
    if (cancelled || !answer)
        kill(child, SIGKILL);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (cancelled)
        return Error{"cancelled"};
    if (silent)
        return Error{what + ": reading it did not progress for " + std::to_string(kSilenceLimitMs / 1000) +
                     " s and was stopped; the file is probably damaged"};
    if (!answer)
        return Error{what + ": reading it " + describeEnd(status) + "; the file is probably damaged"};
    return std::move(*answer);
}

} // namespace nanscope
