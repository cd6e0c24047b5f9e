#include "core/open/OpenRun.h"

#include "core/importers/CheckpointFiles.h"

#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/run/ChildProcessCall.h"
#include "core/importers/CheckpointSeries.h"
#include "core/importers/MetricsCsvReader.h"
#include "core/open/MultiRankRun.h"
#include "core/importers/RunSourceBuilder.h"
#include "core/importers/TensorBoardReader.h"
#include "core/importers/TrainerStateReader.h"
#include "core/importers/StepTextLogReader.h"
#include "core/importers/TrackerFolderReader.h"
#include "core/importers/TrainingTextLogReader.h"

#include <algorithm>
#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

namespace nanscope {

namespace {

// A Trainer output folder nests event files in runs/<date_host>/ and Lightning nests metrics.csv
// in lightning_logs/version_K/: four levels find both from the folder a user picks, and the cap
// keeps a home directory opened by mistake from being walked whole.
constexpr int kSearchDepth = 4;
constexpr size_t kMostEntries = 20000;

bool hasName(const fs::path& path, const char* name)
{
    return path.filename() == name;
}

bool isEventFileName(const fs::path& path)
{
    return path.filename().string().find("tfevents") != std::string::npos;
}

// The files whose name alone says what they are (the rest are sniffed).
bool isKnownByName(const fs::path& path)
{
    return hasName(path, "trainer_state.json") || hasName(path, "wandb-history.jsonl") ||
           hasName(path, "metrics.csv") || isEventFileName(path) || path.extension() == ".ckpt";
}

// Lightning names checkpoints `epoch=3-step=1200.ckpt`; others `step_1200.pt`, `model_1200.ckpt`.
std::optional<int64_t> stepInName(const std::string& name)
{
    static const std::regex stepPattern(R"((?:step[=_-]?)(\d{1,15}))");
    std::smatch match;
    if (std::regex_search(name, match, stepPattern))
        return std::stoll(match[1].str());
    return std::nullopt;
}

// A file whose content decides: read by the reader that takes it, or passed over with why.
void addSniffed(FoundLogs& found, const fs::path& path)
{
    SniffedFile sniffed = sniffLogFile(path.string());
    if (sniffed.reader)
        found.sniffedLogs.push_back(std::move(sniffed));
    else
        found.passedOver.push_back(std::move(sniffed.refusal));
}

void addFile(FoundLogs& found, const fs::path& path, uintmax_t& trainerStateSize)
{
    std::error_code ec;
    const std::string name = path.filename().string();
    if (hasName(path, "trainer_state.json")) {
        // Every checkpoint-N/ holds the history up to N; the largest file holds the most.
        const uintmax_t size = fs::file_size(path, ec);
        if (!ec && size >= trainerStateSize) {
            if (!found.trainerState.empty())
                found.notes.push_back(found.trainerState + ": a shorter copy of the Trainer's history; " +
                                      path.string() + " is read");
            found.trainerState = path.string();
            trainerStateSize = size;
        }
    } else if (hasName(path, "wandb-history.jsonl")) {
        found.wandbHistories.push_back(path.string());
    } else if (hasName(path, "metrics.csv")) {
        found.metricsCsv.push_back(path.string());
    } else if (isEventFileName(path)) {
        found.eventFiles.push_back(path.string());
    } else if (path.extension() == ".ckpt") {
        if (auto step = stepInName(name))
            found.checkpoints[*step] = found.checkpointSources[*step] = path.string();
        else
            found.notes.push_back(path.string() + ": a checkpoint with no step in its name, left out");
    } else if (std::string why = notALogByName(path.string()); !why.empty()) {
        // Said when nothing in the folder is a run: which files were looked at, and why each is
        // not a log, so that a person knows what to convert.
        found.passedOver.push_back(path.string() + ": " + why);
    } else {
        addSniffed(found, path);
    }
}

void sortFound(FoundLogs& found)
{
    // version_10 after version_9: compare by the number, the latest version first.
    auto versionOf = [](const std::string& path) -> int64_t {
        static const std::regex pattern(R"(version_(\d{1,9}))");
        std::smatch match;
        return std::regex_search(path, match, pattern) ? std::stoll(match[1].str()) : -1;
    };
    std::sort(found.metricsCsv.begin(), found.metricsCsv.end(),
              [&](const std::string& a, const std::string& b) { return versionOf(a) > versionOf(b); });
    if (found.metricsCsv.size() > 1) {
        found.notes.push_back(std::to_string(found.metricsCsv.size() - 1) + " older metrics.csv left out; " +
                              found.metricsCsv.front() + " is read");
        found.metricsCsv.resize(1);
    }
    // Event files are named events.out.tfevents.<unix time>.<host>...: by name is by time within a folder.
    std::sort(found.eventFiles.begin(), found.eventFiles.end());
    std::sort(found.sniffedLogs.begin(), found.sniffedLogs.end(),
              [](const SniffedFile& a, const SniffedFile& b) { return a.path < b.path; });
    // A W&B run file holds one run: of several (a wandb/ folder of runs), the last by name is read
    // (W&B names run folders run-<date>_<time>-<id>), and the others are named.
    std::vector<std::string> wandbRuns;
    for (const SniffedFile& log : found.sniffedLogs)
        if (std::string_view(log.reader->id) == "wandb-records")
            wandbRuns.push_back(log.path);
    if (wandbRuns.size() > 1) {
        found.notes.push_back(std::to_string(wandbRuns.size()) + " W&B run files; " + wandbRuns.back() +
                              " is read (open a run's folder or file to read another)");
        found.sniffedLogs.erase(std::remove_if(found.sniffedLogs.begin(), found.sniffedLogs.end(),
                                               [&](const SniffedFile& log) {
                                                   return std::string_view(log.reader->id) == "wandb-records" &&
                                                          log.path != wandbRuns.back();
                                               }),
                                found.sniffedLogs.end());
    }
    // An MLflow store holds many runs: the latest is read, and the others are named.
    if (found.mlflowRuns.size() > 1) {
        std::stable_sort(found.mlflowRuns.begin(), found.mlflowRuns.end(), [](const std::string& a, const std::string& b) {
            return mlflowRunStartTime(a) > mlflowRunStartTime(b);
        });
        found.notes.push_back(std::to_string(found.mlflowRuns.size()) + " MLflow runs; the latest, " +
                              found.mlflowRuns.front() + ", is read (open a run's folder to read another)");
        found.mlflowRuns.resize(1);
    }
    std::sort(found.wandbHistories.begin(), found.wandbHistories.end());
    if (found.wandbHistories.size() > 1) {
        found.notes.push_back(std::to_string(found.wandbHistories.size()) + " W&B runs; " +
                              found.wandbHistories.back() + " is read (open a run's folder to read another)");
        found.wandbHistories.erase(found.wandbHistories.begin(), found.wandbHistories.end() - 1);
    }
}

// Several event files of one run (a resumed run starts a new one) read as one log.
void appendLog(ScalarLog& into, ScalarLog from)
{
    if (into.path.empty()) {
        into = std::move(from);
        return;
    }
    const auto name = [](const std::string& path) { return fs::path(path).filename().string(); };
    if (into.alsoRead.empty())
        for (std::string& note : into.notes)
            note = name(into.path) + ": " + note;
    into.alsoRead.push_back(from.path);
    for (std::string& note : from.notes)
        note = name(from.path) + ": " + note;
    for (auto& [name, points] : from.series)
        into.series[name].insert(into.series[name].end(), points.begin(), points.end());
    for (auto& [name, points] : from.histograms)
        into.histograms[name].insert(into.histograms[name].end(), points.begin(), points.end());
    into.events.insert(into.events.end(), from.events.begin(), from.events.end());
    into.attributes.insert(from.attributes.begin(), from.attributes.end());
    into.warnings.insert(into.warnings.end(), from.warnings.begin(), from.warnings.end());
    into.notes.insert(into.notes.end(), from.notes.begin(), from.notes.end());
}

} // namespace

FoundLogs findLogs(const std::string& pathText)
{
    FoundLogs found;
    std::error_code ec;
    const fs::path path(pathText);
    uintmax_t trainerStateSize = 0;
    if (fs::is_regular_file(path, ec)) {
        if (hasName(path, runformat::kLogFileName)) {
            found.runFile = path.string();
        } else if (isKnownByName(path)) {
            addFile(found, path, trainerStateSize);
        } else {
            addSniffed(found, path); // a file the user named is sniffed whatever its name says
        }
        sortFound(found);
        return found;
    }
    if (!fs::is_directory(path, ec))
        return found;
    if (fs::is_regular_file(path / runformat::kLogFileName, ec)) {
        found.runFile = (path / runformat::kLogFileName).string();
        return found;
    }
    if (isMlflowRunFolder(path.string())) {
        found.mlflowRuns.push_back(path.string());
        return found;
    }
    static const std::regex checkpointFolder(R"(checkpoint-(\d{1,15}))");
    size_t entries = 0;
    auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (++entries > kMostEntries) {
            found.notes.push_back(pathText + ": more than " + std::to_string(kMostEntries) +
                                  " files; the search stopped there");
            break;
        }
        const fs::path entry = it->path();
        const std::string name = entry.filename().string();
        if (it->is_directory(ec)) {
            std::smatch match;
            if (!name.empty() && name[0] == '.') {
                it.disable_recursion_pending();
            } else if (isMlflowRunFolder(entry.string())) {
                found.mlflowRuns.push_back(entry.string());
                it.disable_recursion_pending();
            } else if (std::regex_match(name, match, checkpointFolder)) {
                const int64_t step = std::stoll(match[1].str());
                if (std::string weights = trainerWeightsFile(entry.string()); !weights.empty())
                    found.checkpoints[step] = weights;
                if (holdsTrainerWeights(entry.string()))
                    found.checkpointSources[step] = entry.string();
                if (fs::is_regular_file(entry / "trainer_state.json", ec))
                    addFile(found, entry / "trainer_state.json", trainerStateSize);
                it.disable_recursion_pending();
            } else if (it.depth() + 1 >= kSearchDepth) {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (it->is_regular_file(ec))
            addFile(found, entry, trainerStateSize);
    }
    sortFound(found);
    return found;
}

namespace {

uint64_t bytesOnDisk(const std::string& path)
{
    std::error_code ec;
    if (fs::is_regular_file(path, ec))
        return fs::file_size(path, ec);
    uint64_t total = 0;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->is_regular_file(ec))
            total += it->file_size(ec);
    return total;
}

void writeTables(ByteWriter& out, const std::map<std::string, std::vector<float>>& tables)
{
    out.number<uint64_t>(tables.size());
    for (const auto& [name, values] : tables) {
        out.text(name);
        out.numbers(values);
    }
}

std::map<std::string, std::vector<float>> readTables(ByteReader& in)
{
    std::map<std::string, std::vector<float>> tables;
    const uint64_t count = in.number<uint64_t>();
    for (uint64_t i = 0; i < count; ++i) {
        std::string name = in.text();
        tables[std::move(name)] = in.numbers<float>();
    }
    return tables;
}

std::string encodeSeries(const CheckpointSeries& series)
{
    ByteWriter out;
    out.numbers(series.steps);
    out.texts(series.parameters);
    out.number<uint64_t>(series.parameterShapes.size());
    for (const auto& shape : series.parameterShapes)
        out.numbers(shape);
    out.number<uint8_t>(series.parametersInModelOrder ? 1 : 0);
    writeTables(out, series.layerDatasets);
    out.numbers(series.updateSteps);
    out.numbers(series.updateBaseSteps);
    writeTables(out, series.updateDatasets);
    out.texts(series.buffers);
    writeTables(out, series.bufferDatasets);
    out.texts(series.warnings);
    out.texts(series.notes);
    return out.take();
}

CheckpointSeries decodeSeries(const std::string& bytes)
{
    ByteReader in(bytes);
    CheckpointSeries series;
    series.steps = in.numbers<int64_t>();
    series.parameters = in.texts();
    const uint64_t shapes = in.number<uint64_t>();
    for (uint64_t i = 0; i < shapes && i <= bytes.size(); ++i)
        series.parameterShapes.push_back(in.numbers<int64_t>());
    series.parametersInModelOrder = in.number<uint8_t>() != 0;
    series.layerDatasets = readTables(in);
    series.updateSteps = in.numbers<int64_t>();
    series.updateBaseSteps = in.numbers<int64_t>();
    series.updateDatasets = readTables(in);
    series.buffers = in.texts();
    series.bufferDatasets = readTables(in);
    series.warnings = in.texts();
    series.notes = in.texts();
    return series;
}

// The checkpoints are unpickled in a child process (ChildProcessCall.h): a damaged or hostile
// checkpoint must not take down the window that opens the folder. The child's progress comes back.
Result<CheckpointSeries> readCheckpointSeriesInChild(const std::map<int64_t, std::string>& checkpoints,
                                                     const ProgressCallback& progress)
{
    const std::string what = checkpoints.size() == 1 ? checkpoints.begin()->second
                                                     : "one of the " + std::to_string(checkpoints.size()) +
                                                           " checkpoints (" + checkpoints.begin()->second + ", ...)";
    auto answer = computeInChildProcess(
        what,
        [&](const ProgressCallback& childProgress) -> Result<std::string> {
            auto series = readCheckpointSeries(checkpoints, childProgress);
            if (!series)
                return Error{series.error()};
            return encodeSeries(*series);
        },
        progress);
    if (!answer)
        return Error{answer.error()};
    try {
        return decodeSeries(*answer);
    } catch (const std::exception& e) {
        return Error{what + ": the checkpoint reader's answer is damaged (" + e.what() + ")"};
    }
}

// Per-layer series across the checkpoints: parameter norms and NaN/Inf counts (/layers), the update
// between consecutive checkpoints (/updates), BatchNorm buffers (/buffers).
Status addCheckpointSeries(RunSourceBuilder& builder, const std::map<int64_t, std::string>& checkpoints,
                           const ProgressCallback& progress)
{
    uint64_t bytes = 0;
    for (const auto& [step, weights] : checkpoints)
        bytes += bytesOnDisk(weights);
    if (bytes > kMostCheckpointBytesAtOpen) {
        builder.addNote(std::to_string(checkpoints.size()) + " checkpoints hold " + std::to_string(bytes >> 20) +
                        " MiB: their per-layer series are not read at open (more than " +
                        std::to_string(kMostCheckpointBytesAtOpen >> 20) +
                        " MiB); the checkpoints pane reads any one of them");
        return Status::success();
    }
    auto series = readCheckpointSeriesInChild(checkpoints, progress);
    if (!series) {
        if (series.error().find("cancelled") != std::string::npos)
            return Error{series.error()};
        builder.addWarning(series.error());
        return Status::success();
    }
    if (!series->parameters.empty() && !series->steps.empty())
        builder.addMatrixTable(runformat::kLayers, series->parameters, series->steps, series->layerDatasets);
    if (!series->parameters.empty() && !series->updateSteps.empty())
        builder.addMatrixTable(kCheckpointUpdatesTable, series->parameters, series->updateSteps,
                               series->updateDatasets);
    if (!series->buffers.empty() && !series->steps.empty())
        builder.addMatrixTable(runformat::kBuffers, series->buffers, series->steps, series->bufferDatasets);
    for (const std::string& warning : series->warnings)
        builder.addWarning(warning);
    for (const std::string& note : series->notes)
        builder.addNote(note);
    return Status::success();
}

} // namespace

namespace {

// Why nothing at `path` opens as a run: for a file the user named, what it is; for a folder, what
// nanscope reads and what it passed over there.
std::string nothingFoundText(const std::string& path, const FoundLogs& found)
{
    std::error_code ec;
    if (fs::is_regular_file(path, ec) && found.passedOver.size() == 1) {
        // A file the user named: what it is, by its name where that says, and what its content is.
        std::string why = found.passedOver.front().substr(std::min(found.passedOver.front().size(), path.size() + 2));
        if (const std::string byName = notALogByName(path); !byName.empty())
            why = byName + "; " + why;
        return path + ": not a training log nanscope reads: " + why;
    }
    std::string why = path + ": no training run found: no file here is a log nanscope reads (a run.h5, a "
                             "Trainer's trainer_state.json, a Lightning metrics.csv, TensorBoard event files, "
                             "a W&B run file, a text, JSON-lines or CSV log, checkpoints)";
    for (const std::string& note : found.notes)
        why += "; " + note;
    constexpr size_t kMostListed = 12;
    for (size_t i = 0; i < found.passedOver.size() && i < kMostListed; ++i)
        why += "\n  " + found.passedOver[i];
    if (found.passedOver.size() > kMostListed)
        why += "\n  and " + std::to_string(found.passedOver.size() - kMostListed) + " more files";
    return why;
}

} // namespace

Result<std::unique_ptr<RunSource>> openRun(const std::string& path, const ProgressCallback& progress)
{
    std::error_code ec;
    if (!fs::exists(path, ec))
        return Error{path + ": does not exist"};
    if (isMultiRankRun(path)) {
        auto ranks = openMultiRankRun(path);
        if (!ranks)
            return Error{ranks.error()};
        return std::unique_ptr<RunSource>(std::move(*ranks));
    }
    FoundLogs found = findLogs(path);
    if (!found.runFile.empty()) {
        auto reader = RunReader::open(found.runFile);
        if (!reader)
            return Error{reader.error()};
        return std::unique_ptr<RunSource>(std::move(*reader));
    }
    if (found.empty())
        return Error{nothingFoundText(path, found)};

    RunSourceBuilder builder(path);
    std::vector<std::string> errors;
    auto take = [&](Result<ScalarLog> log) {
        if (log)
            builder.add(std::move(*log));
        else
            errors.push_back(log.error());
    };
    if (!found.trainerState.empty())
        take(readTrainerState(found.trainerState));
    for (const std::string& csv : found.metricsCsv)
        take(readMetricsCsv(csv));
    if (!found.eventFiles.empty()) {
        ScalarLog events;
        for (const std::string& file : found.eventFiles) {
            auto log = readTensorBoardEvents(file);
            if (log)
                appendLog(events, std::move(*log));
            else
                errors.push_back(log.error());
        }
        if (!events.path.empty()) {
            if (!events.alsoRead.empty())
                events.format = "TensorBoard event files (" + std::to_string(events.alsoRead.size() + 1) + ")";
            builder.add(std::move(events));
        }
    }
    // A W&B run folder holds the run file (its history: every value with its step) and files/output.log
    // (what the script printed, W&B's copy of the console): the history is read first, and the
    // console copy only when the history holds nothing.
    std::stable_partition(found.sniffedLogs.begin(), found.sniffedLogs.end(), [](const SniffedFile& log) {
        return std::string_view(log.reader->id) == "wandb-records";
    });
    std::vector<fs::path> wandbRunsRead;
    std::vector<std::string> consoleCopiesLeftOut;
    for (const SniffedFile& log : found.sniffedLogs) {
        const fs::path file(log.path);
        if (std::string_view(log.reader->id) != "wandb-records" && file.filename() == "output.log" &&
            file.parent_path().filename() == "files" &&
            std::find(wandbRunsRead.begin(), wandbRunsRead.end(), file.parent_path().parent_path()) !=
                wandbRunsRead.end()) {
            builder.addNote(log.path + ": not read: W&B's copy of the console; the run file's history holds the "
                                       "values with their steps");
            consoleCopiesLeftOut.push_back(log.path);
            continue;
        }
        Result<ScalarLog> read = log.reader->read(log.path);
        if (read && std::string_view(log.reader->id) == "wandb-records")
            wandbRunsRead.push_back(file.parent_path());
        take(std::move(read));
    }
    // What the sniffers decided, for `nanscope info`: each file read and how, each passed over and why.
    for (const SniffedFile& log : found.sniffedLogs)
        if (std::find(consoleCopiesLeftOut.begin(), consoleCopiesLeftOut.end(), log.path) == consoleCopiesLeftOut.end())
            builder.addNote(fs::path(log.path).filename().string() + ": read as " + log.reader->format + " (" +
                        log.verdict.what + ")");
    constexpr size_t kMostPassedOver = 12;
    for (size_t i = 0; i < found.passedOver.size() && i < kMostPassedOver; ++i)
        builder.addNote("not read: " + found.passedOver[i]);
    if (found.passedOver.size() > kMostPassedOver)
        builder.addNote("and " + std::to_string(found.passedOver.size() - kMostPassedOver) + " more files not read");
    for (const std::string& run : found.mlflowRuns)
        take(readMlflowRun(run));
    for (const std::string& history : found.wandbHistories)
        take(readWandbHistory(history));
    builder.addCheckpoints(found.checkpoints);
    if (!found.checkpointSources.empty())
        if (Status s = addCheckpointSeries(builder, found.checkpointSources, progress); !s)
            return Error{s.error()};
    for (std::string& note : found.notes)
        builder.addNote(std::move(note));
    // Nothing readable: the first reader's error, taken before the errors become warnings below
    // (which move them away: the message would otherwise be empty).
    if (builder.empty())
        return Error{errors.empty() ? path + ": nothing readable" : errors.front()};
    // A log that could not be read is a warning when others could: the run is shown from them.
    for (std::string& error : errors)
        builder.addWarning(std::move(error));
    auto run = builder.build();
    if (!run)
        return Error{run.error()};
    return std::unique_ptr<RunSource>(std::move(*run));
}

} // namespace nanscope
