// What starting nanscope costs (issue 54): `nanscope --version`, `nanscope scan` of a 300-step run
// and the window opened offscreen to a drawn overview of it (`--screenshot`), each a new process,
// against /bin/true started the same way in the same run (the baseline: what any process costs
// here). Targets: --version <= 20 ms; scan <= 100 ms and <= 50 MB peak resident memory; the window
// <= 400 ms. For context, `nanscope-torch --version`: the start every command paid while one
// program held LibTorch.
//
// usage: bench_startup [WORK_DIR] [REPEATS]
#include "BenchRuns.h"
#include "BenchTable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

struct Start
{
    double milliseconds = 0;
    double peakMegabytes = 0;
    int exitCode = -1;
};

// One start of `argv`, its output thrown away; wall time from spawn to exit, and the child's
// peak resident memory from wait4.
Start startOnce(const std::vector<std::string>& words)
{
    std::vector<char*> argv;
    for (const std::string& w : words)
        argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    Start start;
    const auto begin = std::chrono::steady_clock::now();
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return start;
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    start.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    start.peakMegabytes = double(usage.ru_maxrss) / 1024.0;
    start.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    posix_spawn_file_actions_destroy(&actions);
    return start;
}

struct Figures
{
    double medianMs = 0;
    double peakMb = 0;
    bool ran = true;
};

Figures measure(const std::vector<std::string>& words, int repeats, std::vector<int> okCodes = {0})
{
    startOnce(words); // the first start reads the files into the page cache
    std::vector<double> times;
    Figures f;
    for (int i = 0; i < repeats; ++i) {
        const Start s = startOnce(words);
        if (std::find(okCodes.begin(), okCodes.end(), s.exitCode) == okCodes.end())
            f.ran = false;
        times.push_back(s.milliseconds);
        f.peakMb = std::max(f.peakMb, s.peakMegabytes);
    }
    std::sort(times.begin(), times.end());
    f.medianMs = times[times.size() / 2];
    return f;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace nanscope::bench;
    const std::string work = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "nanscope-bench-startup").string();
    const int repeats = argc > 2 ? std::max(3, std::atoi(argv[2])) : 15;
    const std::string bin = NANSCOPE_BIN_DIR;
    const std::string nanscope = bin + "/nanscope";
    const std::string nanscopeTorch = bin + "/nanscope-torch";
    std::filesystem::create_directories(work);
    const std::string run = work + "/run-300";
    // Written by a child: a started program's peak memory, as wait4 reports it, includes what its
    // parent held when it was spawned, so this process stays as small as /bin/true shows.
    if (const pid_t writer = fork(); writer == 0) {
        const nanscope::Status s = writeLargeRun(run, 300, 40);
        if (!s)
            std::fprintf(stderr, "bench_startup: cannot write %s: %s\n", run.c_str(), s.error().c_str());
        std::fflush(stderr);
        _exit(s ? 0 : 2);
    } else {
        int status = 0;
        waitpid(writer, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 2;
    }
    flushWrittenFiles();
    setenv("QT_QPA_PLATFORM", "offscreen", 1);

    const Figures baseline = measure({"/bin/true"}, repeats);
    const Figures version = measure({nanscope, "--version"}, repeats);
    // Exit code 1: the scan found a critical incident (the run has one, on purpose).
    const Figures scan = measure({nanscope, "scan", run}, repeats, {0, 1});
    const Figures window = measure({nanscope, run, "--screenshot", work + "/overview.png"}, std::max(3, repeats / 3));
    const Figures torchVersion = measure({nanscopeTorch, "--version"}, std::max(3, repeats / 3));

    std::printf("starts, median of %d (peak resident memory):\n", repeats);
    std::printf("  /bin/true                      %8.2f ms  %6.1f MB\n", baseline.medianMs, baseline.peakMb);
    std::printf("  nanscope --version             %8.2f ms  %6.1f MB\n", version.medianMs, version.peakMb);
    std::printf("  nanscope scan (300 steps)      %8.2f ms  %6.1f MB\n", scan.medianMs, scan.peakMb);
    std::printf("  nanscope RUN --screenshot      %8.2f ms  %6.1f MB\n", window.medianMs, window.peakMb);
    std::printf("  nanscope-torch --version       %8.2f ms  %6.1f MB\n", torchVersion.medianMs, torchVersion.peakMb);
    const std::string base = milliseconds(baseline.medianMs) + " (/bin/true)";
    auto row = [&](const char* figure, const Figures& f, double targetMs) {
        tableRow("bench_startup", figure, f.ran ? milliseconds(f.medianMs) : "failed", base,
                 "<= " + milliseconds(targetMs), f.ran && f.medianMs <= targetMs);
    };
    row("nanscope --version", version, 20);
    row("nanscope scan of a 300-step run", scan, 100);
    tableRow("bench_startup", "nanscope scan of a 300-step run, peak memory", formatted("%.1f MB", scan.peakMb),
             formatted("%.1f MB (/bin/true)", baseline.peakMb), "<= 50 MB", scan.ran && scan.peakMb <= 50);
    row("nanscope RUN: the window drawn (offscreen screenshot)", window, 400);
    tableRow("bench_startup", "nanscope-torch --version (LibTorch loaded)", milliseconds(torchVersion.medianMs),
             formatted("%.1f MB", torchVersion.peakMb), "", std::nullopt);
    std::filesystem::remove_all(work);
    return version.ran && scan.ran && window.ran ? 0 : 1;
}
