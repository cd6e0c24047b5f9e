// Opening other tools' logs, on the 100,000-step files written here in a temp folder:
//   - a Hugging Face trainer_state.json: a train entry every step (loss, grad_norm, learning_rate,
//     epoch), an eval entry every 500 steps, the closing summary, and the bare NaN / Infinity
//     tokens an AMP run writes (skipped steps' grad norms, a loss that blows up at the end);
//   - a TensorBoard event file as the Trainer writes it beside that: one record per scalar per
//     step (train/loss, train/grad_norm, train/learning_rate), valid CRC-32Cs;
//   - for comparison, a run.h5 with the same series at the same steps, written with RunWriter.
// Each file's figures are ratios against reading its own bytes from disk into memory (page cache
// warm), measured in the same run: openRun to a RunSource, openRun + scanRun, and in the window
// (offscreen) opening it to a drawn overview, then the scan's incidents shown. Medians of a few.
//
// usage: QT_QPA_PLATFORM=offscreen bench_sources [WORK_DIR] [STEPS] [--keep]
//   --keep leaves the files in WORK_DIR, to profile a reader on them.
#include "BenchTable.h"
#include "app/window/MainWindow.h"
#include "core/run/RunWriter.h"
#include "core/open/RunScan.h"
#include "core/importers/Crc32c.h"
#include "core/open/OpenRun.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStandardPaths>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace nanscope;

namespace {

constexpr int64_t kEvalEvery = 500;
constexpr int kHeadlessRepeats = 5;
constexpr int kByteReadRepeats = 21; // a few milliseconds each: more of them steady the baseline
constexpr int kWindowRepeats = 3;

// Deterministic noise: the same files on every run, so figures compare across runs.
struct Noise
{
    uint64_t state = 0x9E3779B97F4A7C15ull;
    double next() // uniform in [0, 1)
    {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return double(state >> 11) / double(uint64_t(1) << 53);
    }
};

// What one training step logged, shared by the three files so they hold the same run.
struct StepValues
{
    double loss, gradNorm, learningRate, epoch;
};

// An AMP run: the loss-scale search overflows the first steps (NaN grad norm), an overflow now and
// then after (NaN or Infinity grad norm), and a loss that blows up to NaN over the last 0.1%.
std::vector<StepValues> makeRun(int64_t steps)
{
    Noise noise;
    std::vector<StepValues> run(size_t(steps) + 1); // steps count from 1, as the Trainer's do
    const int64_t blowup = steps - steps / 1000;
    for (int64_t step = 1; step <= steps; ++step) {
        StepValues& v = run[size_t(step)];
        v.epoch = 3.0 * double(step) / double(steps);
        v.learningRate = 5e-5 * std::min(1.0, double(step) / 2000.0) * (1.0 - 0.9 * double(step) / double(steps));
        v.loss = 2.0 / (1.0 + double(step) * 1e-4) * (0.8 + 0.4 * noise.next());
        v.gradNorm = 0.5 + noise.next();
        if (step <= 8 || step % 4999 == 0)
            v.gradNorm = std::numeric_limits<double>::quiet_NaN();
        else if (step % 24989 == 0)
            v.gradNorm = std::numeric_limits<double>::infinity();
        if (step > blowup) {
            const double growth = std::pow(10.0, double(step - blowup) / 10.0);
            v.loss = growth < 1e30 ? v.loss * growth : std::numeric_limits<double>::quiet_NaN();
            v.gradNorm = growth < 1e30 ? v.gradNorm * growth : std::numeric_limits<double>::quiet_NaN();
        }
    }
    return run;
}

// A float as Python's json module writes it: repr (shortest round trip, always a '.' or an
// exponent), and the bare NaN / Infinity tokens strict JSON has no words for.
void appendPythonFloat(std::string& out, double value)
{
    if (std::isnan(value)) {
        out += "NaN";
        return;
    }
    if (std::isinf(value)) {
        out += value > 0 ? "Infinity" : "-Infinity";
        return;
    }
    char buffer[32];
    const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
    const std::string_view text(buffer, size_t(written.ptr - buffer));
    out += text;
    if (text.find_first_of(".en") == std::string_view::npos)
        out += ".0";
}

// json.dump(state, indent=2, sort_keys=True), as the Trainer's save_state writes it.
std::string trainerStateJson(const std::vector<StepValues>& run)
{
    const int64_t steps = int64_t(run.size()) - 1;
    std::string out;
    out.reserve(size_t(steps) * 150);
    out += "{\n  \"best_metric\": null,\n  \"best_model_checkpoint\": null,\n  \"epoch\": 3.0,\n"
           "  \"eval_steps\": 500,\n  \"global_step\": " + std::to_string(steps) + ",\n"
           "  \"is_hyper_param_search\": false,\n  \"is_local_process_zero\": true,\n"
           "  \"is_world_process_zero\": true,\n  \"log_history\": [\n";
    auto field = [&](const char* key, double value, bool last = false) {
        out += "      \"";
        out += key;
        out += "\": ";
        appendPythonFloat(out, value);
        out += last ? "\n" : ",\n";
    };
    Noise noise;
    for (int64_t step = 1; step <= steps; ++step) {
        const StepValues& v = run[size_t(step)];
        out += "    {\n";
        field("epoch", v.epoch);
        field("grad_norm", v.gradNorm);
        field("learning_rate", v.learningRate);
        field("loss", v.loss);
        out += "      \"step\": " + std::to_string(step) + "\n    },\n";
        if (step % kEvalEvery == 0) {
            out += "    {\n";
            field("epoch", v.epoch);
            field("eval_loss", std::isfinite(v.loss) ? v.loss * 1.1 : v.loss);
            field("eval_runtime", 30.0 + noise.next());
            field("eval_samples_per_second", 60.0 + noise.next());
            field("eval_steps_per_second", 7.5 + noise.next());
            out += "      \"step\": " + std::to_string(step) + "\n    },\n";
        }
    }
    out += "    {\n";
    field("epoch", 3.0);
    out += "      \"step\": " + std::to_string(steps) + ",\n";
    field("total_flos", 5.785036350898176e+17);
    field("train_loss", 0.9123);
    field("train_runtime", 36512.25);
    field("train_samples_per_second", 21.9);
    field("train_steps_per_second", 2.739, true);
    out += "    }\n  ],\n  \"logging_steps\": 1,\n  \"max_steps\": " + std::to_string(steps) + ",\n"
           "  \"num_input_tokens_seen\": 0,\n  \"num_train_epochs\": 3,\n  \"save_steps\": 5000,\n"
           "  \"total_flos\": 5.785036350898176e+17,\n  \"train_batch_size\": 8,\n  \"trial_name\": null,\n"
           "  \"trial_params\": null\n}\n";
    return out;
}

// Just enough protobuf to write Event records (field numbers of tensorboard_event.proto's Event,
// Summary and Summary.Value), without the generated classes.
struct ProtoWriter
{
    std::string bytes;

    void varint(uint64_t value)
    {
        for (; value >= 0x80; value >>= 7)
            bytes.push_back(char((value & 0x7F) | 0x80));
        bytes.push_back(char(value));
    }
    void key(int field, int wireType) { varint(uint64_t(field) << 3 | uint64_t(wireType)); }
    void fixed(const void* value, size_t size) { bytes.append(static_cast<const char*>(value), size); }
    ProtoWriter& float64(int field, double value)
    {
        key(field, 1);
        fixed(&value, 8);
        return *this;
    }
    ProtoWriter& float32(int field, float value)
    {
        key(field, 5);
        fixed(&value, 4);
        return *this;
    }
    ProtoWriter& integer(int field, uint64_t value)
    {
        key(field, 0);
        varint(value);
        return *this;
    }
    ProtoWriter& blob(int field, const std::string& value)
    {
        key(field, 2);
        varint(value.size());
        bytes += value;
        return *this;
    }
};

void appendLittleEndian(std::string& out, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
}

// length | masked CRC-32C of the length | data | masked CRC-32C of the data
void appendTfRecord(std::string& out, const std::string& data)
{
    const size_t lengthAt = out.size();
    appendLittleEndian(out, data.size(), 8);
    appendLittleEndian(out, maskCrc32c(crc32c(out.data() + lengthAt, 8)), 4);
    out += data;
    appendLittleEndian(out, maskCrc32c(crc32c(data.data(), data.size())), 4);
}

// torch.utils.tensorboard's add_scalar: one Event per call, its value a float32 simple_value.
std::string eventFile(const std::vector<StepValues>& run)
{
    const int64_t steps = int64_t(run.size()) - 1;
    std::string out;
    out.reserve(size_t(steps) * 3 * 56);
    appendTfRecord(out, ProtoWriter().float64(1, 1742826235.0).blob(3, "brain.Event:2").bytes);
    for (int64_t step = 1; step <= steps; ++step) {
        const StepValues& v = run[size_t(step)];
        const double wallTime = 1742826235.0 + double(step) * 0.37;
        for (const auto& [tag, value] : {std::pair<const char*, double>{"train/loss", v.loss},
                                         {"train/grad_norm", v.gradNorm},
                                         {"train/learning_rate", v.learningRate}}) {
            const std::string summaryValue = ProtoWriter().blob(1, tag).float32(2, float(value)).bytes;
            const std::string summary = ProtoWriter().blob(1, summaryValue).bytes;
            appendTfRecord(out, ProtoWriter().float64(1, wallTime).integer(2, uint64_t(step)).blob(5, summary).bytes);
        }
    }
    return out;
}

// The same run as nanscope's recorder would have written it: /scalars every step, /eval of its own.
Status writeRunFile(const std::string& dir, const std::vector<StepValues>& run)
{
    fs::remove_all(dir);
    RunSchema schema;
    schema.scalars = {"loss", "grad_norm", "lr", "epoch"};
    schema.seriesTables = {{"eval", {"eval_loss"}}};
    auto writer = RunWriter::create(dir, schema);
    if (!writer)
        return Error{writer.error()};
    const int64_t steps = int64_t(run.size()) - 1;
    const int64_t block = 4096;
    for (int64_t begin = 1; begin <= steps; begin += block) {
        const int64_t end = std::min(steps + 1, begin + block);
        std::vector<int64_t> blockSteps;
        std::map<std::string, std::vector<double>> values;
        for (int64_t step = begin; step < end; ++step) {
            const StepValues& v = run[size_t(step)];
            blockSteps.push_back(step);
            values["loss"].push_back(v.loss);
            values["grad_norm"].push_back(v.gradNorm);
            values["lr"].push_back(v.learningRate);
            values["epoch"].push_back(v.epoch);
        }
        if (Status s = (*writer)->appendSeries("scalars", blockSteps, values); !s)
            return s;
    }
    std::vector<int64_t> evalSteps;
    std::vector<double> evalLoss;
    for (int64_t step = kEvalEvery; step <= steps; step += kEvalEvery) {
        evalSteps.push_back(step);
        evalLoss.push_back(run[size_t(step)].loss * 1.1);
    }
    if (Status s = (*writer)->appendSeries("eval", evalSteps, {{"eval_loss", evalLoss}}); !s)
        return s;
    return (*writer)->close();
}

bool writeFile(const std::string& path, const std::string& bytes)
{
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    return bool(out);
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double medianMs(int repeats, const std::function<void()>& work)
{
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        QElapsedTimer timer;
        timer.start();
        work();
        times.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    return median(times);
}

// The baseline: the file's bytes from disk (the page cache, after the first) into memory.
bool readWholeFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::string bytes(size_t(fs::file_size(path)), '\0');
    in.read(bytes.data(), std::streamsize(bytes.size()));
    return size_t(in.gcount()) == bytes.size() && !bytes.empty();
}

struct Subject
{
    Subject(const char* label, std::string file, std::string open)
        : label(label)
        , file(std::move(file))
        , open(std::move(open))
    {
    }

    const char* label;
    std::string file; // what the byte-read baseline reads
    std::string open; // what openRun and the window open (the folder, as a user picks it)
    double readMs = 0, openMs = 0, openScanMs = 0, windowMs = 0, windowScanMs = 0;
    size_t incidents = 0;
    std::string error;
};

void measureHeadless(Subject& s)
{
    s.readMs = medianMs(kByteReadRepeats, [&] {
        if (!readWholeFile(s.file))
            s.error = "cannot read " + s.file;
    });
    s.openMs = medianMs(kHeadlessRepeats, [&] {
        auto run = openRun(s.open);
        if (!run)
            s.error = run.error();
    });
    s.openScanMs = medianMs(kHeadlessRepeats, [&] {
        auto run = openRun(s.open);
        if (!run) {
            s.error = run.error();
            return;
        }
        auto report = scanRun(**run);
        if (!report)
            s.error = report.error();
        else
            s.incidents = report->report.incidents.size();
    });
}

// As bench_gui: from MainWindow::openRun to every visible overview plot drawn; then until the
// scan's incidents are in the window (the session thread scans right after the snapshot).
bool measureWindow(MainWindow& window, Subject& s, int repeats)
{
    std::vector<double> open, scanned;
    for (int i = 0; i < repeats; ++i) {
        QSignalSpy loaded(&window, &MainWindow::runLoaded);
        QSignalSpy judged(&window, &MainWindow::layersJudged);
        QElapsedTimer timer;
        timer.start();
        window.openRun(QString::fromStdString(s.open));
        if (!loaded.wait(60000) || !loaded.front().front().toBool()) {
            s.error = "the window did not open it: " + window.errorText().toStdString();
            return false;
        }
        for (auto* plot : window.overview()->plots())
            if (plot->isVisible())
                plot->plot()->replot(QCustomPlot::rpImmediateRefresh);
        open.push_back(double(timer.nsecsElapsed()) / 1e6);
        // Waiting for the scan also keeps the next open from queueing behind this one's scan.
        if (!judged.wait(60000)) {
            s.error = "the window showed no scan";
            return false;
        }
        scanned.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    s.windowMs = median(open);
    s.windowScanMs = median(scanned);
    return true;
}

void printRow(const char* what, const std::vector<Subject>& subjects, double Subject::*figure, bool ratio = true)
{
    std::printf("%-36s", what);
    for (const Subject& s : subjects) {
        char cell[64];
        if (ratio)
            std::snprintf(cell, sizeof cell, "%8.1f ms %6.0fx", s.*figure, s.*figure / s.readMs);
        else
            std::snprintf(cell, sizeof cell, "%8.1f ms  (base)", s.*figure);
        std::printf("  %-24s", cell);
    }
    std::printf("\n");
}

} // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    // Opening runs writes the recent-runs list: keep the bench's out of the user's settings.
    QStandardPaths::setTestModeEnabled(true);
    if (qEnvironmentVariableIsEmpty("NANSCOPE_PROGRAM"))
        qputenv("NANSCOPE_PROGRAM", (QCoreApplication::applicationDirPath() + "/../bin/nanscope").toLocal8Bit());
    QStringList args = app.arguments();
    const bool keepFiles = args.removeAll("--keep") > 0;
    const std::string dir = args.value(1, QDir::temp().filePath("nanscope-bench-sources")).toStdString();
    const int64_t steps = args.value(2, "100000").toLongLong();

    QElapsedTimer timer;
    timer.start();
    fs::remove_all(dir);
    const std::vector<StepValues> run = makeRun(steps);
    const std::string trainerState = dir + "/trainer/trainer_state.json";
    const std::string events = dir + "/tensorboard/events.out.tfevents.1742826235.bench-host.107869.0";
    if (!writeFile(trainerState, trainerStateJson(run)) || !writeFile(events, eventFile(run))) {
        std::fprintf(stderr, "cannot write the logs under %s\n", dir.c_str());
        return 1;
    }
    if (Status s = writeRunFile(dir + "/run", run); !s) {
        std::fprintf(stderr, "%s\n", s.error().c_str());
        return 1;
    }
    nanscope::bench::flushWrittenFiles();
    std::vector<Subject> subjects{
        {"trainer_state.json", trainerState, dir + "/trainer"},
        {"TensorBoard events", events, dir + "/tensorboard"},
        {"run.h5 (RunWriter)", dir + "/run/run.h5", dir + "/run"},
    };
    std::printf("%lld steps written in %.1f s:", (long long)steps, double(timer.elapsed()) / 1000.0);
    for (const Subject& s : subjects)
        std::printf("  %s %.1f MB", s.label, double(fs::file_size(s.file)) / 1e6);
    std::printf("\n");

    for (Subject& s : subjects)
        measureHeadless(s);

    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    // One open first, not counted: the window's first drawing loads fonts and styles.
    Subject warmUp = subjects.back();
    measureWindow(window, warmUp, 1);
    for (Subject& s : subjects)
        measureWindow(window, s, kWindowRepeats);

    std::printf("\nmedians of %d (byte reads: %d, window: %d); ratios against reading the file's bytes\n",
                kHeadlessRepeats, kByteReadRepeats, kWindowRepeats);
    std::printf("%-36s", "");
    for (const Subject& s : subjects)
        std::printf("  %-24s", s.label);
    std::printf("\n");
    printRow("read the bytes (baseline)", subjects, &Subject::readMs, false);
    printRow("openRun -> RunSource", subjects, &Subject::openMs);
    printRow("openRun + scanRun", subjects, &Subject::openScanMs);
    printRow("window: open to a drawn overview", subjects, &Subject::windowMs);
    printRow("window: incidents shown", subjects, &Subject::windowScanMs);
    std::printf("%-36s", "incidents found");
    for (const Subject& s : subjects)
        std::printf("  %-24zu", s.incidents);
    std::printf("\n");
    namespace b = nanscope::bench;
    for (const Subject& s : subjects) {
        // The target is for the other tools' logs (issue 29): a RunSource from each under 120 ms.
        const bool other = std::string(s.label) != "run.h5 (RunWriter)";
        b::tableRow("bench_sources", std::string(s.label) + ", " + std::to_string(steps) + " steps: openRun",
                    b::milliseconds(s.openMs), b::milliseconds(s.readMs) + " reading its bytes", other ? "< 120 ms" : "",
                    other ? std::optional<bool>(s.openMs < 120) : std::nullopt);
        b::tableRow("bench_sources", std::string(s.label) + ": window open to a drawn overview",
                    b::milliseconds(s.windowMs), b::milliseconds(s.readMs) + " reading its bytes", "", std::nullopt);
    }
    int failed = 0;
    for (const Subject& s : subjects)
        if (!s.error.empty()) {
            std::fprintf(stderr, "%s: %s\n", s.label, s.error.c_str());
            failed = 1;
        }
    std::printf("total %.1f s\n", double(timer.elapsed()) / 1000.0);
    if (!keepFiles)
        fs::remove_all(dir);
    return failed;
}
