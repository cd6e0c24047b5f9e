// Replay overhead on a torch.export archive (issue 57): the instrumented replay (every node of the
// exported graph run through the dispatcher and measured as it runs, gradient statistics taken in
// backward) against the same graph run op by op with nothing measured, forward, loss and backward,
// on the same batch, in the same process. Target: at most 1.3x. The archives are exported by the
// pinned torch (bench/bench_export_replay.py writes them and runs this program):
//   bench_export_replay NAME CHECKPOINT.pt2 BATCH.pt [NAME CHECKPOINT BATCH ...]
#include "BenchTable.h"
#include "core/replay/ReplayOptions.h"
#include "core/torch/ExportReplay.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

static double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

int main(int argc, char** argv)
{
    using namespace nanscope;
    if (argc < 4 || (argc - 1) % 3 != 0) {
        std::fprintf(stderr, "usage: bench_export_replay NAME CHECKPOINT.pt2 BATCH.pt [...]\n");
        return 2;
    }
    keepFreedMemoryForReuse(); // as `nanscope replay` runs
    constexpr int kRuns = 7;
    for (int i = 1; i + 2 < argc; i += 3) {
        const std::string name = argv[i];
        ReplayOptions options;
        options.checkpoint = argv[i + 1];
        options.batch = argv[i + 2];
        options.dtypeChosen = false;
        auto plain = timePlainExportedStep(options, kRuns);
        if (!plain) {
            std::fprintf(stderr, "%s: %s\n", name.c_str(), plain.error().c_str());
            return 1;
        }
        std::vector<double> instrumented;
        for (int run = 0; run <= kRuns; ++run) {
            auto replayed = replayExportedStep(options);
            if (!replayed) {
                std::fprintf(stderr, "%s: %s\n", name.c_str(), replayed.error().c_str());
                return 1;
            }
            if (run > 0) // the first run warms the allocator, as the plain side's warm-up does
                instrumented.push_back(replayed->instrumentedMs);
        }
        // The plain side again after the instrumented runs: the better of its two figures, so
        // that neither side gains from running second.
        auto plainAgain = timePlainExportedStep(options, kRuns);
        const double baseline = std::min(*plain, plainAgain ? *plainAgain : *plain);
        const double measured = median(instrumented);
        const double ratio = measured / baseline;
        std::printf("%-12s plain %.2f ms   instrumented %.2f ms   %.2fx\n", name.c_str(), baseline, measured, ratio);
        bench::tableRow("bench_export_replay", name + ": instrumented .pt2 replay / plain forward+backward",
                        bench::formatted("%.2fx", ratio), bench::formatted("%.2f ms", baseline), "<= 1.3x", ratio <= 1.3);
    }
    return 0;
}
