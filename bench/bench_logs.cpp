// How fast a log of no known format opens (issue 49: "a 2 GB text log opens at 300 MB/s or more on
// one core ... with memory bounded by the series"). Writes three logs of MEGABYTES each in the
// shapes real logs have (tests/data/logs): a Hugging Face Trainer console (dict lines between
// progress-bar redraws), a verl console (one line of forty `/`-nested metrics a step, ANSI tags),
// and detectron2-style JSON lines. For each, in a child process of its own (so that each reports
// its own peak memory): reading the file's bytes in 1 MiB blocks (the baseline), then the reader
// that sniffing picks, then opening it as a run (openRun: the reader and the run's tables), each
// three times; the medians are the figures.
//
//   bench_logs [FOLDER] [MEGABYTES]     (default: a temporary folder, 256 MB per log)

#include "BenchTable.h"

#include "core/importers/LogReaderRegistry.h"
#include "core/open/OpenRun.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace nanscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRepeats = 3;

void writeConsoleDicts(const std::string& path, uint64_t bytes)
{
    std::ofstream out(path, std::ios::binary);
    std::mt19937_64 random(1);
    std::uniform_real_distribution<double> unit(0, 1);
    char line[512];
    uint64_t written = 0;
    for (int64_t step = 1; written < bytes; ++step) {
        int n = std::snprintf(line, sizeof line, " %2d%%|####      | %lld/1000000 [00:10<00:12, 4.50it/s]\r",
                              int(step % 100), static_cast<long long>(step));
        out.write(line, n);
        written += size_t(n);
        if (step % 10 == 0) {
            n = std::snprintf(line, sizeof line,
                              "{'loss': %.4f, 'grad_norm': %.17g, 'learning_rate': %.16g, 'epoch': %.2f}\n",
                              2 * unit(random), 3 * unit(random), 2e-5 * (1 - step / 2e6), step / 20000.0);
            out.write(line, n);
            written += size_t(n);
        }
    }
}

void writeVerlConsole(const std::string& path, uint64_t bytes)
{
    std::ofstream out(path, std::ios::binary);
    std::mt19937_64 random(2);
    std::uniform_real_distribution<double> unit(-1, 1);
    static const char* groups[] = {"actor", "critic", "rollout", "timing_s", "perf"};
    std::string line;
    uint64_t written = 0;
    for (int64_t step = 1; written < bytes; ++step) {
        line = "\x1b[36m(TaskRunner pid=2021996)\x1b[0m step:" + std::to_string(step);
        for (int m = 0; m < 40; ++m) {
            char metric[96];
            std::snprintf(metric, sizeof metric, " - %s/metric_%d:%.10g", groups[m % 5], m, unit(random) * (m + 1));
            line += metric;
        }
        line += " - training/global_step:" + std::to_string(step) + "\n";
        out << line;
        written += line.size();
    }
}

void writeJsonLines(const std::string& path, uint64_t bytes)
{
    std::ofstream out(path, std::ios::binary);
    std::mt19937_64 random(3);
    std::uniform_real_distribution<double> unit(0, 1);
    char line[512];
    uint64_t written = 0;
    for (int64_t iteration = 19; written < bytes; iteration += 20) {
        const int n = std::snprintf(
            line, sizeof line,
            "{\"data_time\": %.17g, \"iteration\": %lld, \"loss_box_reg\": %.17g, \"loss_cls\": %.17g, "
            "\"loss_rpn_cls\": %.17g, \"lr\": %.17g, \"time\": %.17g, \"total_loss\": %.17g}\n",
            unit(random) / 100, static_cast<long long>(iteration), unit(random), unit(random), unit(random) / 10,
            0.00025, 0.4 + unit(random) / 10, 2 * unit(random));
        out.write(line, n);
        written += size_t(n);
    }
}

double readBytesMs(const std::string& path)
{
    std::vector<char> block(size_t(1) << 20);
    const auto start = Clock::now();
    std::ifstream in(path, std::ios::binary);
    uint64_t sum = 0;
    while (in.read(block.data(), std::streamsize(block.size())) || in.gcount() > 0) {
        sum += uint64_t(block[0]);
        if (in.gcount() < std::streamsize(block.size()))
            break;
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (sum == 1)
        std::puts("");
    return ms;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// In a child: the baseline and the reader, then the rows.
void measure(const char* shape, const std::string& path)
{
    const double megabytes = double(fs::file_size(path)) / (1 << 20);
    std::vector<double> baseline, reads;
    size_t series = 0;
    uint64_t points = 0;
    std::string reader;
    for (int i = 0; i < kRepeats; ++i)
        baseline.push_back(readBytesMs(path));
    for (int i = 0; i < kRepeats; ++i) {
        const auto start = Clock::now();
        const SniffedFile sniffed = sniffLogFile(path);
        if (!sniffed.reader) {
            std::printf("%s: refused: %s\n", shape, sniffed.refusal.c_str());
            std::exit(1);
        }
        auto log = sniffed.reader->read(path);
        reads.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (!log) {
            std::printf("%s: %s\n", shape, log.error().c_str());
            std::exit(1);
        }
        reader = sniffed.reader->id;
        series = log->series.size();
        points = 0;
        for (const auto& [name, values] : log->series)
            points += values.size();
    }
    // Opening it as a run: the reader and the run's tables (RunSourceBuilder), as the window and
    // every command open it.
    std::vector<double> opens;
    for (int i = 0; i < kRepeats; ++i) {
        const auto start = Clock::now();
        auto run = openRun(path);
        opens.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (!run) {
            std::printf("%s: %s\n", shape, run.error().c_str());
            std::exit(1);
        }
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    const double readMs = median(reads), byteMs = median(baseline), openMs = median(opens);
    const double openRate = megabytes / (openMs / 1000);
    const double rate = megabytes / (readMs / 1000);
    std::printf("%s: %.0f MB read by %s in %.0f ms (%.0f MB/s; the bytes alone %.0f ms), %zu series, %llu values, "
                "peak memory %.0f MiB\n",
                shape, megabytes, reader.c_str(), readMs, rate, byteMs, series,
                static_cast<unsigned long long>(points), usage.ru_maxrss / 1024.0);
    const std::string figure = std::string(shape) + ", " + bench::formatted("%.0f MB", megabytes);
    bench::tableRow("bench_logs", figure + ": read, MB/s on one core", bench::formatted("%.0f MB/s", rate),
                    bench::milliseconds(byteMs) + " reading its bytes", ">= 300 MB/s", rate >= 300);
    std::printf("%s: opened as a run in %.0f ms (%.0f MB/s)\n", shape, openMs, openRate);
    bench::tableRow("bench_logs", figure + ": opened as a run (openRun), MB/s on one core",
                    bench::formatted("%.0f MB/s", openRate), bench::milliseconds(byteMs) + " reading its bytes",
                    ">= 300 MB/s", openRate >= 300);
    bench::tableRow("bench_logs", figure + ": peak memory (" + std::to_string(points) + " values)",
                    bench::formatted("%.0f MiB", usage.ru_maxrss / 1024.0), "", "bounded by the series", std::nullopt);
}

} // namespace

int main(int argc, char** argv)
{
    const std::string folder = argc > 1 ? argv[1] : (fs::temp_directory_path() / "nanscope-bench-logs").string();
    const uint64_t megabytes = argc > 2 ? std::stoull(argv[2]) : 256;
    fs::create_directories(folder);
    const uint64_t bytes = megabytes << 20;
    struct Shape
    {
        const char* name;
        std::string path;
        void (*write)(const std::string&, uint64_t);
    };
    const Shape shapes[] = {
        {"Trainer console (dicts, progress bars)", folder + "/trainer_console.log", writeConsoleDicts},
        {"verl console (40 metrics a line)", folder + "/verl_console.log", writeVerlConsole},
        {"JSON lines (detectron2-style)", folder + "/metrics.json", writeJsonLines},
    };
    for (const Shape& shape : shapes)
        shape.write(shape.path, bytes);
    bench::flushWrittenFiles();
    int failed = 0;
    for (const Shape& shape : shapes) {
        std::fflush(stdout);
        const pid_t child = fork();
        if (child == 0) {
            measure(shape.name, shape.path);
            std::fflush(stdout);
            _exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        failed |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (const Shape& shape : shapes)
        fs::remove(shape.path);
    return failed;
}
