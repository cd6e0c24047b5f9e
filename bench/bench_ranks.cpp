// A multi-rank run at scale: R ranks, each S steps of scalars (loss, grad_norm, local_grad_norm,
// lr) and an L-layer /layers/grad_norm table logged every K steps (tables have their own steps: a
// per-layer row every step of 1,000 layers x 100,000 steps x 64 ranks would be 25 GB). Rank R/2
// is fed a NaN batch at 60% of the run; the last rank is killed at 90% (its rank.json says
// running). Figures are ratios against a baseline measured in the same run that only reads the
// same data (every rank's run.h5 opened, its scalar series and its whole layer table read):
//   - openRun of the whole run (every rank's run.h5 opened and validated);
//   - scanRun of the job: every rank's own scan and the rank rules;
//   - in the window (offscreen): open to a drawn overview; then switching rank to a drawn overview.
//
// usage: QT_QPA_PLATFORM=offscreen bench_ranks [WORK_DIR] [RANKS] [STEPS] [LAYERS] [LAYER_EVERY] [--keep]
//   defaults 64 ranks x 100000 steps x 1000 layers every 100 steps.
#include "BenchTable.h"
#include "app/window/MainWindow.h"
#include "app/window/RankControls.h"
#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"
#include "core/scan/RankScan.h"
#include "core/open/OpenRun.h"
#include "core/open/RunScan.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace rf = nanscope::runformat;
using namespace nanscope;

namespace {

struct Scale
{
    int ranks = 64;
    int64_t steps = 100000;
    int64_t layers = 1000;
    int64_t layerEvery = 100;
};

Status writeRank(const fs::path& dir, int rank, const Scale& scale)
{
    const int64_t poisonStep = scale.steps * 6 / 10;
    const bool poisoned = rank == scale.ranks / 2;
    const bool killed = rank == scale.ranks - 1;
    const int64_t steps = killed ? scale.steps * 9 / 10 : scale.steps;
    std::vector<std::string> names;
    for (int64_t i = 0; i < scale.layers; ++i)
        names.push_back("block" + std::to_string(i / 4) + ".param" + std::to_string(i % 4));
    RunSchema schema;
    schema.scalars = {"loss", "grad_norm", rf::kLocalGradNorm, "lr"};
    schema.layers = names;
    schema.layerParamNorm = false;
    schema.layerGradNonfinite = false;
    auto writer = RunWriter::create(dir.string(), schema);
    if (!writer)
        return Error{writer.error()};
    std::mt19937 rng(uint32_t(rank + 1));
    std::lognormal_distribution<double> noise(0.0, 0.3);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const int64_t block = 8192;
    for (int64_t begin = 0; begin < steps; begin += block) {
        std::vector<int64_t> blockSteps;
        std::map<std::string, std::vector<double>> values;
        for (int64_t step = begin; step < std::min(steps, begin + block); ++step) {
            blockSteps.push_back(step);
            const bool poison = step == poisonStep;
            values["loss"].push_back(poison && poisoned ? nan : 2.0 / (1 + step * 1e-4) * noise(rng));
            values["grad_norm"].push_back(poison ? nan : 0.5 * noise(rng)); // all-reduced: NaN everywhere
            values[rf::kLocalGradNorm].push_back(poison && poisoned ? nan : noise(rng));
            values["lr"].push_back(1e-3);
        }
        if (Status s = (*writer)->appendSeries(rf::kScalars, blockSteps, values); !s)
            return s;
    }
    std::lognormal_distribution<float> layerNoise(0.f, 0.5f);
    std::vector<int64_t> layerSteps;
    std::vector<float> grad;
    for (int64_t step = 0; step < steps; step += scale.layerEvery) {
        layerSteps.push_back(step);
        for (int64_t c = 0; c < scale.layers; ++c)
            grad.push_back(layerNoise(rng));
        if (layerSteps.size() == 256 || step + scale.layerEvery >= steps) {
            if (Status s = (*writer)->appendRows(rf::kLayers, layerSteps, {{"grad_norm", grad}}); !s)
                return s;
            layerSteps.clear();
            grad.clear();
        }
    }
    if (Status s = (*writer)->close(); !s)
        return s;
    std::ofstream status(dir / rf::kRankStatusName);
    status << "{\"rank\": " << rank << ", \"world_size\": " << scale.ranks << ", \"state\": \""
           << (killed ? rf::kRankStateRunning : rf::kRankStateFinished) << "\", \"last_step\": " << steps - 1 << "}\n";
    return Status::success();
}

Status writeJob(const fs::path& dir, const Scale& scale)
{
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream manifest(dir / rf::kRankManifestName);
    manifest << "{\"format\": \"" << rf::kRankManifestFormat << "\", \"format_version\": 1, \"world_size\": "
             << scale.ranks << ", \"ranks\": [";
    for (int rank = 0; rank < scale.ranks; ++rank)
        manifest << (rank ? ", " : "") << "{\"rank\": " << rank << ", \"directory\": \"" << rf::rankDirName(rank)
                 << "\"}";
    manifest << "]}\n";
    manifest.close();
    for (int rank = 0; rank < scale.ranks; ++rank)
        if (Status s = writeRank(dir / rf::rankDirName(rank), rank, scale); !s)
            return s;
    return Status::success();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double medianMs(int repeats, const std::function<bool()>& work)
{
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        QElapsedTimer timer;
        timer.start();
        if (!work())
            return std::numeric_limits<double>::quiet_NaN();
        times.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    return median(times);
}

// The baseline: every rank's run.h5 opened and the same data read, nothing computed.
bool readSameData(const fs::path& dir, const Scale& scale)
{
    for (int rank = 0; rank < scale.ranks; ++rank) {
        auto reader = RunReader::open((dir / rf::rankDirName(rank)).string());
        if (!reader)
            return false;
        for (const char* series : {"loss", "grad_norm", rf::kLocalGradNorm, "lr"})
            if (!(*reader)->readSeries(rf::kScalars, series))
                return false;
        const TableInfo* layers = (*reader)->table(rf::kLayers);
        if (!layers || !(*reader)->readBlock(rf::kLayers, "grad_norm", 0, layers->rows))
            return false;
    }
    return true;
}

void drawOverview(MainWindow& window)
{
    for (auto* plot : window.overview()->plots())
        if (plot->isVisible())
            plot->plot()->replot(QCustomPlot::rpImmediateRefresh);
}

void printRow(const char* what, double ms, double baseMs)
{
    std::printf("%-44s %10.1f ms %8.1fx\n", what, ms, ms / baseMs);
}

// The window's timings: opening the multi-rank run to a drawn overview, and switching to another
// rank, `repeats` times each. An empty `failure` when every wait came.
struct WindowTimings
{
    std::vector<double> windowOpen, switches;
    std::string failure;
};

WindowTimings timeWindow(const fs::path& work, const Scale& scale, int repeats)
{
    WindowTimings timings;
    std::vector<double>& windowOpen = timings.windowOpen;
    std::vector<double>& switches = timings.switches;
    std::string& windowFailure = timings.failure;
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    auto* ranks = window.findChild<RankControls*>();
    if (!ranks)
        windowFailure = "the window has no rank controls";
    // Every wait is bounded: a signal that never comes is a finding to print, not a hang.
    const int waitMs = 300000;
    for (int i = 0; i < repeats && windowFailure.empty(); ++i) {
        QSignalSpy loaded(&window, &MainWindow::runLoaded);
        QSignalSpy judged(&window, &MainWindow::layersJudged);
        QElapsedTimer timer;
        timer.start();
        window.openRun(QString::fromStdString(work.string()));
        if (!loaded.wait(waitMs) || !loaded.front().front().toBool()) {
            windowFailure = "the run did not load";
            break;
        }
        drawOverview(window);
        windowOpen.push_back(double(timer.nsecsElapsed()) / 1e6);
        // The scan of every rank, so the switch does not queue behind it.
        if (judged.isEmpty() && !judged.wait(waitMs)) {
            windowFailure = "the scan of every rank did not finish";
            break;
        }
        // The window opens on the first rank to look at; a switch goes to another one (a request
        // for the rank shown is, rightly, nothing to do).
        const int target = (ranks->shownRank() + 1) % scale.ranks;
        QSignalSpy switched(&window, &MainWindow::runLoaded);
        QSignalSpy rejudged(&window, &MainWindow::layersJudged);
        timer.restart();
        emit ranks->rankRequested(target);
        if (!switched.wait(waitMs)) {
            windowFailure = "switching to rank " + std::to_string(target) + " loaded nothing";
            break;
        }
        drawOverview(window);
        switches.push_back(double(timer.nsecsElapsed()) / 1e6);
        if (rejudged.isEmpty() && !rejudged.wait(waitMs)) {
            windowFailure = "the incidents did not follow the switch to rank " + std::to_string(target);
            break;
        }
    }

    return timings;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // each figure as it is measured, also into a pipe
    std::vector<std::string> args;
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--keep")
            keep = true;
        else
            args.push_back(argv[i]);
    }
    const fs::path work = args.size() > 0 ? fs::path(args[0]) : fs::temp_directory_path() / "nanscope-bench-ranks";
    Scale scale;
    if (args.size() > 1)
        scale.ranks = std::max(3, std::stoi(args[1]));
    if (args.size() > 2)
        scale.steps = std::max<int64_t>(1000, std::stoll(args[2]));
    if (args.size() > 3)
        scale.layers = std::max<int64_t>(1, std::stoll(args[3]));
    if (args.size() > 4)
        scale.layerEvery = std::max<int64_t>(1, std::stoll(args[4]));
    std::printf("scale: %d ranks x %lld steps of scalars, %lld layers' grad norms every %lld steps\n", scale.ranks,
                (long long)scale.steps, (long long)scale.layers, (long long)scale.layerEvery);
    QElapsedTimer writing;
    writing.start();
    if (Status s = writeJob(work, scale); !s) {
        std::fprintf(stderr, "bench_ranks: %s\n", s.error().c_str());
        return 2;
    }
    uintmax_t bytes = 0;
    for (const auto& entry : fs::recursive_directory_iterator(work))
        if (entry.is_regular_file())
            bytes += entry.file_size();
    nanscope::bench::flushWrittenFiles();
    std::printf("written: %.0f MiB in %.1f s (%s)\n\n", double(bytes) / (1 << 20), writing.nsecsElapsed() / 1e9,
                work.string().c_str());

    const int repeats = 3;
    const double baseMs = medianMs(repeats, [&] { return readSameData(work, scale); });
    const double openMs = medianMs(repeats, [&] { return bool(openRun(work.string())); });
    size_t incidents = 0;
    int focus = -1;
    const double scanMs = medianMs(repeats, [&] {
        auto run = openRun(work.string());
        if (!run || !(*run)->rankSet())
            return false;
        auto scanned = scanRun(**run);
        if (!scanned || !scanned->ranks)
            return false;
        incidents = scanned->report.incidents.size();
        focus = scanned->ranks->focusRank;
        return true;
    });

    const WindowTimings timings = timeWindow(work, scale, repeats);
    const std::vector<double>& windowOpen = timings.windowOpen;
    const std::vector<double>& switches = timings.switches;
    const std::string& windowFailure = timings.failure;

    std::printf("%-44s %10.1f ms    (base)\n", "baseline: read the same data, every rank", baseMs);
    printRow("openRun (every rank's run.h5)", openMs, baseMs);
    printRow("scanRun (every rank + rank rules)", scanMs, baseMs);
    if (!windowFailure.empty() || windowOpen.empty() || switches.empty()) {
        std::printf("window: %s\n", windowFailure.empty() ? "did not open the run" : windowFailure.c_str());
    } else {
        printRow("window: open to a drawn overview", median(windowOpen), baseMs);
        printRow("window: switch rank to a drawn overview", median(switches), baseMs);
    }
    namespace b = nanscope::bench;
    const std::string size = std::to_string(scale.ranks) + " ranks x " + std::to_string(scale.steps) + " steps";
    const std::string base = b::milliseconds(baseMs) + " reading the same data";
    b::tableRow("bench_ranks", "openRun, " + size, b::milliseconds(openMs), base, "", std::nullopt);
    b::tableRow("bench_ranks", "scan every rank", b::milliseconds(scanMs), base, "< 30 s", scanMs < 30000);
    if (!windowOpen.empty() && !switches.empty()) {
        b::tableRow("bench_ranks", "window: open to a drawn overview", b::milliseconds(median(windowOpen)), base, "< 3 s",
                    median(windowOpen) < 3000);
        b::tableRow("bench_ranks", "window: switch rank to a drawn overview", b::milliseconds(median(switches)), base,
                    "< 300 ms", median(switches) < 300);
    } else {
        b::tableRow("bench_ranks", "window", windowFailure.empty() ? "did not open the run" : windowFailure, base, "",
                    false);
    }
    std::printf("\nscan: %zu incidents, first rank to look at: %d (expected %d)\n", incidents, focus, scale.ranks / 2);
    if (!keep)
        fs::remove_all(work);
    return 0;
}
