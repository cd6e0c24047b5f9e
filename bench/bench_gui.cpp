// GUI figures on a 100,000-step x 1,000-layer run (issue #6), rendered offscreen:
// - open to a drawn overview (target < 500 ms), then the heatmap and layer health (< 2 s): the
//   medians of three opens, each in a new window;
// - redraw after a pan or zoom of a 1,000,000-point series (target < 50 ms), against the same
//   plot drawn without QCustomPlot's adaptive sampling, the baseline;
// - draw the layer x step heatmap (target < 200 ms), and, apart, build it from disk.
//
// usage: QT_QPA_PLATFORM=offscreen bench_gui [WORK_DIR] [STEPS] [LAYERS]
#include "BenchRuns.h"
#include "BenchTable.h"

#include "app/window/MainWindow.h"
#include "widgets/HeatmapView.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <cstdio>
#include <memory>

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static double timeReplots(nanscope::SeriesPlot& plot, int repeats)
{
    std::vector<double> times;
    QCPAxis* x = plot.plot()->xAxis;
    for (int i = 0; i < repeats; ++i) {
        // Alternate a pan and a zoom, as a user dragging and scrolling does.
        const double width = i % 2 ? 400000.0 : 900000.0;
        x->setRange(i * 5000.0, i * 5000.0 + width);
        QElapsedTimer timer;
        timer.start();
        plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
        times.push_back(timer.nsecsElapsed() / 1e6);
    }
    return median(times);
}

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    // The window starts `nanscope stats/replay` children: point them at nanscope, not this bench.
    if (qEnvironmentVariableIsEmpty("NANSCOPE_PROGRAM"))
        qputenv("NANSCOPE_PROGRAM", (QCoreApplication::applicationDirPath() + "/../bin/nanscope").toLocal8Bit());
    const QStringList args = app.arguments();
    const QString dir = args.value(1, QDir::temp().filePath("nanscope-bench-gui"));
    const int64_t steps = args.value(2, "100000").toLongLong();
    const int64_t layers = args.value(3, "1000").toLongLong();
    QElapsedTimer timer;
    timer.start();
    auto written = nanscope::bench::writeLargeRun(dir.toStdString(), steps, layers);
    if (!written) {
        std::fprintf(stderr, "%s\n", written.error().c_str());
        return 1;
    }
    nanscope::bench::flushWrittenFiles();
    std::printf("wrote %lld x %lld run in %.1f s\n", (long long)steps, (long long)layers, timer.elapsed() / 1000.0);

    // 1. Open to a drawn overview, then the heatmap and layer health; three times, each in a new
    // window, and the medians: one open in a run of the machine's slow spells read 1.47 s where
    // the ones around it read 0.26-0.31 s. Each open is printed.
    constexpr int kOpens = 3;
    std::vector<double> openTimes, heatmapTimes;
    std::unique_ptr<nanscope::MainWindow> window;
    for (int open = 0; open < kOpens; ++open) {
        window = std::make_unique<nanscope::MainWindow>();
        window->resize(1600, 1000);
        window->show();
        QSignalSpy loaded(window.get(), &nanscope::MainWindow::runLoaded);
        QSignalSpy judged(window.get(), &nanscope::MainWindow::layersJudged);
        timer.restart();
        window->openRun(dir);
        if (!loaded.wait(60000))
            return 1;
        for (auto* plot : window->overview()->plots())
            if (plot->isVisible())
                plot->plot()->replot(QCustomPlot::rpImmediateRefresh);
        openTimes.push_back(timer.nsecsElapsed() / 1e6);
        if (!judged.wait(120000))
            return 1;
        // The heatmap is built on the session's thread apart from the scan: wait for it too.
        nanscope::HeatmapView& heatmap = *window->heatmap();
        for (int waited = 0; heatmap.heatmap().bins() == 0 && waited < 120000; waited += 5)
            QTest::qWait(5);
        if (heatmap.heatmap().bins() == 0) {
            std::fprintf(stderr, "the heatmap never arrived\n");
            return 1;
        }
        heatmapTimes.push_back(timer.nsecsElapsed() / 1e6);
        std::printf("open %d: drawn overview %.1f ms, heatmap and layer health %.1f ms\n", open + 1,
                    openTimes.back(), heatmapTimes.back());
    }
    const double openMs = median(openTimes);
    const double heatmapBuildMs = median(heatmapTimes);
    nanscope::HeatmapView& heatmap = *window->heatmap();

    // 2. A 1,000,000-point series.
    std::vector<int64_t> x(1000000);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = int64_t(i);
        y[i] = 1.0 + std::sin(double(i) * 1e-3) + (i % 7919 == 0 ? 50.0 : 0.0);
    }
    nanscope::SeriesPlot series("grad norm");
    series.resize(1400, 300);
    series.show();
    series.setSeries(x, y);
    const double sampled = timeReplots(series, 20);
    series.plot()->graph(0)->setAdaptiveSampling(false);
    const double unsampled = timeReplots(series, 5);

    // 3. Drawing the heatmap.
    window->showView(nanscope::MainWindow::View::Heatmap);
    std::vector<double> drawTimes;
    for (int i = 0; i < 5; ++i) {
        timer.restart();
        heatmap.setHeatmap(heatmap.heatmap());
        heatmap.plot()->replot(QCustomPlot::rpImmediateRefresh);
        drawTimes.push_back(timer.nsecsElapsed() / 1e6);
    }
    const double heatmapDraw = median(drawTimes);

    std::printf("open to a drawn overview            %8.1f ms (median of %d)   target < 500 ms: %s\n", openMs, kOpens,
                openMs < 500 ? "met" : "MISSED");
    std::printf("  heatmap + layer health follow at  %8.1f ms (background, with progress)   target < 2 s: %s\n",
                heatmapBuildMs, heatmapBuildMs < 2000 ? "met" : "MISSED");
    std::printf("pan/zoom redraw, 1,000,000 points   %8.2f ms   baseline without adaptive sampling %.1f ms (%.0fx)   target < 50 ms: %s\n",
                sampled, unsampled, unsampled / sampled, sampled < 50 ? "met" : "MISSED");
    std::printf("heatmap draw (%lld layers x %zu bins) %8.1f ms   target < 200 ms: %s\n", (long long)layers,
                heatmap.heatmap().bins(), heatmapDraw, heatmapDraw < 200 ? "met" : "MISSED");
    namespace b = nanscope::bench;
    const std::string size = std::to_string(steps) + " x " + std::to_string(layers);
    b::tableRow("bench_gui", "open " + size + " to a drawn overview", b::milliseconds(openMs), "", "< 500 ms",
                openMs < 500);
    b::tableRow("bench_gui", "heatmap and layer health shown", b::milliseconds(heatmapBuildMs), "", "< 2 s",
                heatmapBuildMs < 2000);
    b::tableRow("bench_gui", "pan/zoom redraw, 1,000,000 points", b::milliseconds(sampled),
                b::milliseconds(unsampled) + " without adaptive sampling", "< 50 ms", sampled < 50);
    b::tableRow("bench_gui", "heatmap draw, " + std::to_string(layers) + " layers x " +
                                 std::to_string(heatmap.heatmap().bins()) + " bins",
                b::milliseconds(heatmapDraw), "", "< 200 ms", heatmapDraw < 200);
    QDir(dir).removeRecursively();
    return 0;
}
