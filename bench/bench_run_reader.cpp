// Reads of a large run log: one layer's series and one step's row out of a
// 100,000-step x 1,000-layer float32 table (400 MB per dataset).
// Targets (issue #2): a series well under 50 ms, a row well under 5 ms.
// Baseline, measured in the same run: reading the whole matrix, which is what a reader that
// cannot slice would do before it could show a single layer.
//
// usage: bench_run_reader [WORK_DIR] [STEPS] [LAYERS]
#include "BenchTable.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

static double millisecondsSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv)
{
    const std::string dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "nanscope-bench-run").string();
    const int64_t steps = argc > 2 ? std::stoll(argv[2]) : 100000;
    const int64_t layers = argc > 3 ? std::stoll(argv[3]) : 1000;
    std::filesystem::remove_all(dir);

    std::vector<std::string> names;
    for (int64_t i = 0; i < layers; ++i)
        names.push_back("block" + std::to_string(i / 4) + ".param" + std::to_string(i % 4));
    nanscope::RunSchema schema;
    schema.layers = names;
    schema.layerParamNorm = false;
    schema.layerGradNonfinite = false;
    auto writer = nanscope::RunWriter::create(dir, schema);
    if (!writer) {
        std::fprintf(stderr, "%s\n", writer.error().c_str());
        return 1;
    }
    const auto writeStart = Clock::now();
    std::mt19937 rng(7);
    std::lognormal_distribution<float> gradNorm(0.f, 1.f);
    const int64_t block = 1024;
    std::vector<float> values(size_t(block * layers));
    for (int64_t begin = 0; begin < steps; begin += block) {
        const int64_t count = std::min(block, steps - begin);
        std::vector<int64_t> blockSteps(static_cast<size_t>(count));
        for (int64_t r = 0; r < count; ++r)
            blockSteps[size_t(r)] = begin + r;
        for (auto& v : values)
            v = gradNorm(rng);
        values.resize(size_t(count * layers));
        auto status = (*writer)->appendRows("layers", blockSteps, {{"grad_norm", values}});
        if (!status) {
            std::fprintf(stderr, "%s\n", status.error().c_str());
            return 1;
        }
    }
    (*writer)->close();
    std::printf("wrote %lld x %lld table in %.1f s (%s)\n", (long long)steps, (long long)layers,
                millisecondsSince(writeStart) / 1000.0, dir.c_str());

    auto reader = nanscope::RunReader::open(dir);
    if (!reader) {
        std::fprintf(stderr, "%s\n", reader.error().c_str());
        return 1;
    }
    std::uniform_int_distribution<int64_t> pickColumn(0, layers - 1), pickRow(0, steps - 1);
    // Warm the page cache once, as a user's second look would find it.
    (void)(*reader)->readBlock("layers", "grad_norm", 0, steps);

    std::vector<double> columnTimes, rowTimes;
    for (int i = 0; i < 15; ++i) {
        auto start = Clock::now();
        auto column = (*reader)->readColumn("layers", "grad_norm", pickColumn(rng));
        columnTimes.push_back(millisecondsSince(start));
        if (!column || int64_t(column->size()) != steps)
            return 1;
    }
    for (int i = 0; i < 50; ++i) {
        auto start = Clock::now();
        auto row = (*reader)->readRow("layers", "grad_norm", pickRow(rng));
        rowTimes.push_back(millisecondsSince(start));
        if (!row || int64_t(row->size()) != layers)
            return 1;
    }
    std::vector<double> fullTimes;
    for (int i = 0; i < 3; ++i) {
        auto start = Clock::now();
        auto all = (*reader)->readBlock("layers", "grad_norm", 0, steps);
        fullTimes.push_back(millisecondsSince(start));
    }
    const double column = median(columnTimes), row = median(rowTimes), full = median(fullTimes);
    std::printf("baseline: whole matrix        %9.2f ms\n", full);
    std::printf("one layer's series (%lld)  %9.2f ms   %6.1fx faster than baseline   target < 50 ms: %s\n",
                (long long)steps, column, full / column, column < 50 ? "met" : "MISSED");
    std::printf("one step's row (%lld)       %9.3f ms   %6.0fx faster than baseline   target < 5 ms: %s\n",
                (long long)layers, row, full / row, row < 5 ? "met" : "MISSED");
    namespace b = nanscope::bench;
    b::tableRow("bench_run_reader", "one layer's series of " + std::to_string(steps) + " x " + std::to_string(layers),
                b::milliseconds(column), b::milliseconds(full) + " whole matrix", "< 50 ms", column < 50);
    b::tableRow("bench_run_reader", "one step's row", b::milliseconds(row), b::milliseconds(full) + " whole matrix",
                "< 5 ms", row < 5);
    std::filesystem::remove_all(dir);
    return 0;
}
