// Scans a 100,000-step x 1,000-layer run (every table) and prints the figures: wall time, peak
// memory, and both as ratios against baselines measured in the same run (reading the datasets
// the scan streams whole, block by block; one row block of one [n, L] dataset).
//
//   bench_scan [RUN_DIR]      default /tmp/nanscope-bench-scan; written once, reused after
//   bench_scan --scan-only RUN_DIR     one scan and its baseline, in this process
//   bench_scan --rule-costs RUN_DIR    what each rule costs, one by one
//
// The scan and its baseline are measured as five pairs, each in a fresh process; the table gives
// the medians and the median of the pairs' ratios.
//
// The run: /scalars every step; /layers grad_norm, param_norm, grad_nonfinite every step for
// 1,000 parameters; /activations for 1,000 modules every 10 steps; /buffers for 100 BatchNorm
// layers every step; /inputs every step; a few events. A sudden blow-up at step 90,000 and one
// layer whose gradient vanishes at step 40,000 give the scan something to find.
#include "BenchTable.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"
#include "core/scan/ScanRules.h"
#include "core/open/RunScan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace nanscope;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSteps = 100000;
constexpr int64_t kLayers = 1000;
constexpr int64_t kModules = 1000;
constexpr int64_t kNorms = 100;
constexpr int64_t kActivationsEvery = 10;
constexpr int64_t kBlowupStep = 90000;
constexpr int64_t kVanishStep = 40000;
constexpr int64_t kAppendRows = 4096;

// A cheap, deterministic noise source: the bench must spend its time scanning, not generating.
struct Noise
{
    uint64_t state = 0x9E3779B97F4A7C15ull;
    float next() // roughly uniform in [-1, 1)
    {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return float(int64_t(state >> 40) - (int64_t(1) << 23)) / float(int64_t(1) << 23);
    }
};

double seconds(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Peak resident memory of this process (VmHWM: unlike ru_maxrss it starts afresh at exec).
double peakMiB()
{
    std::FILE* status = std::fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (status && std::fgets(line, sizeof line, status))
        if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (status)
        std::fclose(status);
    return double(kib) / 1024.0;
}

bool writeRun(const std::string& dir)
{
    RunSchema schema;
    schema.attributes = {{"run_name", "bench-100k-x-1000"}};
    schema.scalars = {"loss", "grad_norm", "lr", "skipped"};
    for (int64_t l = 0; l < kLayers; ++l)
        schema.layers.push_back("block" + std::to_string(l / 2) + (l % 2 ? ".bias" : ".weight"));
    for (int64_t m = 0; m < kModules; ++m) {
        schema.activations.push_back("block" + std::to_string(m));
        schema.activationKinds.push_back("Linear");
    }
    for (int64_t b = 0; b < kNorms; ++b)
        schema.buffers.push_back("block" + std::to_string(b * 10));
    schema.inputs = {"x", "y"};
    auto created = RunWriter::create(dir, schema);
    if (!created) {
        std::fprintf(stderr, "%s\n", created.error().c_str());
        return false;
    }
    RunWriter& writer = **created;
    Noise noise;
    auto blowup = [](int64_t step) { return step >= kBlowupStep ? std::pow(10.0, 6.0 + 0.5 * double(step - kBlowupStep)) : 1.0; };
    for (int64_t begin = 0; begin < kSteps; begin += kAppendRows) {
        const int64_t count = std::min(kAppendRows, kSteps - begin);
        std::vector<int64_t> steps(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i)
            steps[size_t(i)] = begin + i;
        std::vector<float> loss, gradTotal, lr, skipped;
        std::vector<float> grad(size_t(count * kLayers)), param(size_t(count * kLayers)),
            nonfinite(size_t(count * kLayers), 0.f);
        for (int64_t i = 0; i < count; ++i) {
            const int64_t step = begin + i;
            const double factor = blowup(step);
            for (int64_t l = 0; l < kLayers; ++l) {
                float g = float((l % 2 ? 0.05 : 0.5) * std::pow(10.0, 0.15 * noise.next()) * factor);
                if (l == 7 && step >= kVanishStep)
                    g = 0.f;
                grad[size_t(i * kLayers + l)] = std::isfinite(g) ? g : INFINITY;
                param[size_t(i * kLayers + l)] = 10.f;
            }
            loss.push_back(float((2.0 * std::exp(-double(step) / 20000.0) + 0.1) * std::pow(10.0, 0.1 * noise.next()) *
                                 (step >= kBlowupStep ? 1e6 : 1.0)));
            gradTotal.push_back(float(12.0 * std::pow(10.0, 0.1 * noise.next()) * factor));
            if (!std::isfinite(gradTotal.back()))
                gradTotal.back() = INFINITY;
            lr.push_back(1e-3f);
            skipped.push_back(0.f);
        }
        Status status = writer.appendRows("scalars", steps,
                                          {{"loss", loss}, {"grad_norm", gradTotal}, {"lr", lr}, {"skipped", skipped}});
        if (status)
            status = writer.appendRows("layers", steps, {{"grad_norm", grad}, {"param_norm", param}, {"grad_nonfinite", nonfinite}});
        // Activations every 10 steps.
        std::vector<int64_t> activationSteps;
        for (int64_t step : steps)
            if (step % kActivationsEvery == 0)
                activationSteps.push_back(step);
        if (status && !activationSteps.empty()) {
            const size_t n = activationSteps.size() * size_t(kModules);
            std::vector<float> lo(n), hi(n), mean(n, 0.f), sd(n, 1.f), zero(n, 0.f);
            for (size_t k = 0; k < n; ++k) {
                hi[k] = 4.f + noise.next();
                lo[k] = -hi[k];
            }
            status = writer.appendRows("activations", activationSteps,
                                       {{"min", lo}, {"max", hi}, {"mean", mean}, {"std", sd}, {"nan", zero}, {"inf", zero}});
        }
        if (status) {
            const size_t n = size_t(count * kNorms);
            std::vector<float> meanLo(n, -0.1f), meanHi(n, 0.1f), varLo(n, 0.5f), varHi(n, 2.f), bad(n, 0.f);
            status = writer.appendRows("buffers", steps,
                                       {{"running_mean_min", meanLo},
                                        {"running_mean_max", meanHi},
                                        {"running_var_min", varLo},
                                        {"running_var_max", varHi},
                                        {"nonfinite", bad}});
        }
        if (status) {
            const size_t n = size_t(count * 2);
            std::vector<float> lo(n, -3.f), hi(n, 3.f), mean(n, 0.f), sd(n, 1.f), zero(n, 0.f);
            status = writer.appendRows("inputs", steps,
                                       {{"min", lo}, {"max", hi}, {"mean", mean}, {"std", sd}, {"nan", zero}, {"inf", zero}});
        }
        if (!status) {
            std::fprintf(stderr, "%s\n", status.error().c_str());
            return false;
        }
    }
    writer.appendEvent(kBlowupStep, "note", "the bench's blow-up");
    return bool(writer.close());
}

// Baseline: what streaming the [n, L] datasets the scan reads whole costs with no analysis at all:
// /layers/grad_norm (the vanishing rule), /buffers (BatchNorm), /activations (activation growth)
// and /inputs (bad inputs). The checksummed /layers/param_norm and grad_nonfinite are read only in
// the windows around incidents.
double baselineSeconds(const std::string& dir)
{
    auto reader = RunReader::open(dir);
    if (!reader)
        return -1;
    const auto start = std::chrono::steady_clock::now();
    const struct
    {
        const char* table;
        const char* dataset;
    } streamed[] = {{"layers", "grad_norm"},     {"buffers", "nonfinite"}, {"buffers", "running_var_min"},
                    {"activations", "max"},    {"activations", "min"},   {"activations", "inf"},
                    {"inputs", "nan"},         {"inputs", "inf"},        {"inputs", "min"},
                    {"inputs", "max"}};
    std::vector<float> block; // one buffer, as the scan's rules read
    for (const auto& s : streamed) {
        const int64_t rows = (*reader)->table(s.table)->rows;
        for (int64_t begin = 0; begin < rows; begin += 4096)
            if (!(*reader)->readBlockInto(s.table, s.dataset, begin, std::min<int64_t>(4096, rows - begin), block))
                return -1;
    }
    return seconds(start);
}

// What each rule costs on this run: the rules run one by one, in the scan's order, on one context
// (so each sees what the rules before it found, as in the scan), each timed alone. In a process of
// its own, as the scan: a second scan in one process finds its memory already paged in.
int printRuleCosts(const std::string& dir)
{
    auto reader = RunReader::open(dir);
    if (!reader)
        return 1;
    const auto loadStart = std::chrono::steady_clock::now();
    auto inputs = scan::ScanInputs::load(**reader);
    if (!inputs)
        return 1;
    scan::ScanContext context(*inputs, ScanConfig{});
    const double loadSeconds = seconds(loadStart);
    std::printf("per rule        (seconds; one by one, in the scan's order)\n");
    std::printf("  %-24s %6.3f\n", "scalars and context", loadSeconds);
    double total = loadSeconds;
    for (const scan::NamedRule& rule : scan::rulesInOrder()) {
        const auto start = std::chrono::steady_clock::now();
        if (!rule.run(context))
            return 1;
        const double spent = seconds(start);
        total += spent;
        std::printf("  %-24s %6.3f\n", rule.name, spent);
    }
    std::printf("  %-24s %6.3f  (the rules alone; the scan also scores spikes and sorts)\n", "sum", total);
    return 0;
}

// One scan and its baseline, measured in a fresh process so that its peak memory is the scan's
// alone. Prints what it measured; with `pairLine`, one "PAIR" line for the parent to gather.
struct ScanPair
{
    double scanSeconds = 0, baselineSeconds = 0, openSeconds = 0, scanMiB = 0, librariesMiB = 0;
    std::string incidents;
};

int scanOnly(const std::string& dir, bool quiet, bool pairLine = false)
{
    ScanPair pair;
    pair.librariesMiB = peakMiB();
    const auto openStart = std::chrono::steady_clock::now();
    auto reader = RunReader::open(dir);
    if (!reader) {
        std::fprintf(stderr, "%s\n", reader.error().c_str());
        return 1;
    }
    pair.openSeconds = seconds(openStart);
    const auto start = std::chrono::steady_clock::now();
    auto report = scanRun(**reader);
    pair.scanSeconds = seconds(start);
    if (!report) {
        std::fprintf(stderr, "%s\n", report.error().c_str());
        return 1;
    }
    pair.scanMiB = peakMiB() - pair.librariesMiB;
    pair.baselineSeconds = baselineSeconds(dir);
    if (quiet)
        return 0;
    for (const auto& incident : report->report.incidents)
        pair.incidents += std::string(" ") + toString(incident.kind) + "@" + std::to_string(incident.onsetStep);
    if (pairLine) {
        std::printf("PAIR %.6f %.6f %.6f %.3f %.3f%s\n", pair.scanSeconds, pair.baselineSeconds, pair.openSeconds,
                    pair.scanMiB, pair.librariesMiB, pair.incidents.c_str());
        return 0;
    }
    std::printf("scan            %.3f s  (+ %.3f s to open the run)\n", pair.scanSeconds, pair.openSeconds);
    std::printf("baseline        %.3f s  streaming the datasets the scan reads whole, no analysis\n",
                pair.baselineSeconds);
    std::printf("scan / baseline %.2f\n", pair.scanSeconds / pair.baselineSeconds);
    std::printf("scan memory     %.1f MiB (%.1f MiB of libraries before the run was opened)\n", pair.scanMiB,
                pair.librariesMiB);
    std::printf("incidents      %s\n", pair.incidents.c_str());
    return 0;
}

int runChild(const char* mode, const std::string& dir)
{
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "bench_scan", mode, dir.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// A child's "PAIR" line, read through a pipe; nullopt when the child failed.
std::optional<ScanPair> measurePair(const std::string& dir)
{
    std::fflush(stdout);
    int fds[2];
    if (pipe(fds) != 0)
        return std::nullopt;
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        execl("/proc/self/exe", "bench_scan", "--scan-pair", dir.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    std::string output;
    char chunk[4096];
    for (ssize_t got; (got = read(fds[0], chunk, sizeof chunk)) > 0;)
        output.append(chunk, size_t(got));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const size_t line = output.find("PAIR ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || line == std::string::npos)
        return std::nullopt;
    ScanPair pair;
    int used = 0;
    if (std::sscanf(output.c_str() + line, "PAIR %lf %lf %lf %lf %lf%n", &pair.scanSeconds, &pair.baselineSeconds,
                    &pair.openSeconds, &pair.scanMiB, &pair.librariesMiB, &used) != 5)
        return std::nullopt;
    const size_t rest = line + size_t(used), end = output.find('\n', rest);
    pair.incidents = output.substr(rest, end == std::string::npos ? std::string::npos : end - rest);
    return pair;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Several scan-and-baseline pairs, each in a fresh process; the figures are medians, the ratio the
// median of each pair's own ratio. The two halves of a pair run back to back under the same load,
// which on this shared 2-core machine moves from one second to the next: one pair's ratio read
// 1.21x and the next one's 1.84x, on the same build.
int measureScan(const std::string& dir)
{
    constexpr int kPairs = 5;
    std::vector<double> scans, baselines, ratios, memory;
    std::string incidents;
    for (int i = 0; i < kPairs; ++i) {
        const std::optional<ScanPair> pair = measurePair(dir);
        if (!pair) {
            std::fprintf(stderr, "bench_scan: a scan of %s failed\n", dir.c_str());
            return 1;
        }
        std::printf("pair %d          scan %.3f s, baseline %.3f s, ratio %.2fx, scan memory %.0f MiB\n", i + 1,
                    pair->scanSeconds, pair->baselineSeconds, pair->scanSeconds / pair->baselineSeconds, pair->scanMiB);
        scans.push_back(pair->scanSeconds);
        baselines.push_back(pair->baselineSeconds);
        ratios.push_back(pair->scanSeconds / pair->baselineSeconds);
        memory.push_back(pair->scanMiB);
        incidents = pair->incidents;
    }
    const double scanSeconds = median(scans), baseline = median(baselines), ratio = median(ratios);
    const double scanMiB = *std::max_element(memory.begin(), memory.end());
    const double blockMiB = 4096.0 * double(kLayers) * 4 / (1 << 20);
    std::printf("scan            %.3f s (median of %d, each in a fresh process)\n", scanSeconds, kPairs);
    std::printf("baseline        %.3f s  streaming the datasets the scan reads whole, no analysis\n", baseline);
    std::printf("scan / baseline %.2f (median of the pairs' ratios)\n", ratio);
    std::printf("scan memory     %.1f MiB = %.1f row blocks of %.1f MiB (the largest of the pairs)\n", scanMiB,
                scanMiB / blockMiB, blockMiB);
    std::printf("incidents      %s\n", incidents.c_str());
    namespace b = nanscope::bench;
    b::tableRow("bench_scan", "scan of 100,000 steps x 1,000 layers, every table", b::seconds(scanSeconds),
                b::seconds(baseline) + " streaming", "< 2 s", scanSeconds < 2);
    b::tableRow("bench_scan", "scan / its streaming baseline", b::times(ratio), b::seconds(baseline), "< 2x", ratio < 2);
    b::tableRow("bench_scan", "scan memory", b::formatted("%.0f MiB", scanMiB), "", "bounded (a few row blocks)",
                std::nullopt);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 3 && std::strcmp(argv[1], "--scan-only") == 0)
        return scanOnly(argv[2], false);
    if (argc == 3 && std::strcmp(argv[1], "--scan-pair") == 0)
        return scanOnly(argv[2], false, true);
    if (argc == 3 && std::strcmp(argv[1], "--rule-costs") == 0)
        return printRuleCosts(argv[2]);
    if (argc == 3 && std::strcmp(argv[1], "--warm") == 0)
        return scanOnly(argv[2], true);
    const std::string dir = argc > 1 ? argv[1] : "/tmp/nanscope-bench-scan";
    if (!fs::exists(fs::path(dir) / "run.h5")) {
        std::printf("writing %lld steps x %lld layers to %s ...\n", static_cast<long long>(kSteps),
                    static_cast<long long>(kLayers), dir.c_str());
        const auto start = std::chrono::steady_clock::now();
        if (!writeRun(dir))
            return 1;
        nanscope::bench::flushWrittenFiles();
        std::printf("written in %.1f s\n", seconds(start));
    }
    std::printf("run             %s, %.2f GB: %lld steps x %lld layers, every table\n", dir.c_str(),
                double(fs::file_size(fs::path(dir) / "run.h5")) / 1e9, static_cast<long long>(kSteps),
                static_cast<long long>(kLayers));
    // One pass first so that both measurements read from the page cache, as a rescan would.
    if (int code = runChild("--warm", dir))
        return code;
    if (int code = measureScan(dir))
        return code;
    return runChild("--rule-costs", dir);
}
