#include "core/importers/RunSourceBuilder.h"

#include "core/run/RunFormat.h"
#include "core/importers/ScalarNames.h"
#include "core/importers/TrainingLoss.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;

namespace {

// One logged series, its steps made strictly increasing.
struct Candidate
{
    std::string canonical;
    std::string logged;
    size_t logIndex = 0;
    std::vector<int64_t> steps;
    std::vector<double> values;
};

// Sorts by step and keeps the last value of a step logged twice: a run resumed from a checkpoint
// logs its steps again, and what it logged last is what the weights went on with.
Candidate ordered(const std::string& logged, size_t logIndex, const std::vector<ScalarPoint>& points,
                  size_t& repeats)
{
    const auto byStep = [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; };
    // Most logs are in step order already: sorted only when they are not (no copy, no n log n).
    std::vector<ScalarPoint> sortedCopy;
    const std::vector<ScalarPoint>* sorted = &points;
    if (!std::is_sorted(points.begin(), points.end(), byStep)) {
        sortedCopy = points;
        std::stable_sort(sortedCopy.begin(), sortedCopy.end(), byStep);
        sorted = &sortedCopy;
    }
    Candidate c{canonicalScalarName(logged), logged, logIndex, {}, {}};
    c.steps.reserve(sorted->size());
    c.values.reserve(sorted->size());
    for (const ScalarPoint& p : *sorted) {
        if (!c.steps.empty() && c.steps.back() == p.step) {
            c.values.back() = p.value;
            ++repeats;
            continue;
        }
        c.steps.push_back(p.step);
        c.values.push_back(p.value);
    }
    return c;
}

std::string fileName(const std::string& path)
{
    return fs::path(path).filename().string();
}

// How notes name a log: its file, or its format when it was read from several files.
std::string labelOf(const ScalarLog& log)
{
    return log.alsoRead.empty() ? fileName(log.path) : log.format;
}

// With no series named loss, the training loss is chosen among the logged ones (TrainingLoss.h):
// one stands in under its own name, or several are summed on the steps they share; a note and the
// loss_source attribute say which.
void chooseStandInLoss(std::map<std::string, Candidate>& chosen, SourceDescription& source, RunInfo& info)
{
    if (chosen.count("loss"))
        return;
    std::vector<LoggedSeries> logged;
    for (const auto& [name, c] : chosen)
        logged.push_back(LoggedSeries{name, &c.steps, &c.values});
    const TrainingLossChoice choice = chooseTrainingLoss(logged);
    if (choice.parts.size() == 1) {
        // The stand-in becomes the loss under its logged name's file, as if it had been named so.
        Candidate loss = std::move(chosen[choice.parts.front()]); // erased next: moved, not copied
        source.notes.push_back("no series named loss: \"" + loss.logged + "\" is taken as the training loss");
        chosen.erase(choice.parts.front());
        loss.canonical = "loss";
        info.attributes.emplace("loss_source", loss.logged);
        chosen["loss"] = std::move(loss);
    } else if (choice.parts.size() > 1) {
        // Their sum, on the steps they share; each part stays a series of its own.
        Candidate sum = chosen[choice.parts.front()];
        sum.canonical = "loss";
        sum.logged = "loss";
        std::string parts;
        for (size_t i = 1; i < choice.parts.size(); ++i) {
            const Candidate& part = chosen[choice.parts[i]];
            for (size_t k = 0; k < sum.values.size() && k < part.values.size(); ++k)
                sum.values[k] += part.values[k];
        }
        for (const std::string& part : choice.parts)
            parts += (parts.empty() ? "" : " + ") + chosen[part].logged;
        source.notes.push_back(choice.why);
        info.attributes.emplace("loss_source", parts);
        chosen["loss"] = std::move(sum);
    }
}

// When each training step was logged (TensorBoard stamps every event) becomes a wall_time series,
// so the window can plot against time as TensorBoard does. Any log of the training series may say
// it: the Trainer's trainer_state.json has no times, its event file has.
void addWallTime(std::map<std::string, Candidate>& chosen,
                 std::map<std::string, std::vector<const std::vector<ScalarPoint>*>>& pointsByName)
{
const char* training = chosen.count("loss") ? "loss" : chosen.count("grad_norm") ? "grad_norm" : nullptr;
if (training && !chosen.count(rf::kWallTime)) {
    const Candidate& t = chosen[training];
    // By step; a later log (or a later point of one log) at the same step wins.
    std::map<int64_t, double> stamps;
    for (const std::vector<ScalarPoint>* points : pointsByName[canonicalScalarName(t.logged)])
        for (const ScalarPoint& p : *points)
            if (std::isfinite(p.wallTime))
                stamps[p.step] = p.wallTime;
    Candidate wall{rf::kWallTime, rf::kWallTime, t.logIndex, {}, {}};
    for (int64_t step : t.steps)
        if (auto it = stamps.find(step); it != stamps.end()) {
            wall.steps.push_back(step);
            wall.values.push_back(it->second);
        }
    if (wall.steps.size() >= 2)
        chosen[rf::kWallTime] = std::move(wall);
}
}

// One table per logging rate: the series logged on exactly the same steps share it.
void addSeriesTables(MemoryRunSource& memory, std::map<std::string, Candidate>& chosen)
{
    std::map<std::vector<int64_t>, std::vector<std::string>> byRate;
    for (const auto& [name, c] : chosen)
        byRate[c.steps].push_back(name);
    std::set<std::string> tableNames;
    // A log with no loss, gradient norm or loss scale at all (an RL log of returns, a table of
    // metrics) is judged on what it has: its most logged series are the run's /scalars.
    const bool noTrainingSeries = !chosen.count("loss") && !chosen.count("grad_norm") && !chosen.count("loss_scale");
    const std::vector<int64_t>* mostLogged = nullptr;
    for (const auto& [steps, names] : byRate)
        if (!mostLogged || steps.size() > mostLogged->size())
            mostLogged = &steps;
    auto tableNameFor = [&](const std::vector<int64_t>& steps, const std::vector<std::string>& names) {
        const std::string& first = names.front();
        auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
        std::string name;
        if (has("loss"))
            name = rf::kScalars;
        else if (!chosen.count("loss") && has("grad_norm"))
            name = rf::kScalars;
        else if (!chosen.count("loss") && !chosen.count("grad_norm") && has("loss_scale"))
            name = rf::kScalars; // a DeepSpeed log without loss lines: the loss scale is its training series
        else if (has("eval_loss"))
            name = "eval";
        else if (noTrainingSeries && &steps == mostLogged)
            name = rf::kScalars;
        else
            name = std::string(rf::kScalars) + "_" + first;
        while (tableNames.count(name))
            name += "_";
        tableNames.insert(name);
        return name;
    };
    for (const auto& [steps, names] : byRate) {
        std::map<std::string, std::vector<double>> series;
        for (const std::string& name : names)
            series[name] = std::move(chosen[name].values); // chosen is not read after this
        memory.addSeriesTable(tableNameFor(steps, names), steps, std::move(series));
    }
}

} // namespace

RunSourceBuilder::RunSourceBuilder(std::string location)
    : m_location(std::move(location))
{
}

void RunSourceBuilder::add(ScalarLog log)
{
    m_logs.push_back(std::move(log));
}

void RunSourceBuilder::addCheckpoints(std::map<int64_t, std::string> checkpoints)
{
    for (auto& [step, path] : checkpoints)
        m_checkpoints[step] = std::move(path);
}

void RunSourceBuilder::addMatrixTable(const std::string& name, std::vector<std::string> columns,
                                      std::vector<int64_t> steps, std::map<std::string, std::vector<float>> datasets)
{
    m_matrixTables.push_back({name, std::move(columns), std::move(steps), std::move(datasets)});
}

Result<std::unique_ptr<MemoryRunSource>> RunSourceBuilder::build()
{
    std::error_code ec;
    const fs::path location(m_location);
    const bool isFolder = fs::is_directory(location, ec);
    if (empty())
        return Error{m_location + ": no training logs or checkpoints found"};

    RunInfo info;
    info.directory = (isFolder ? location : location.parent_path()).string();
    // "runs/x/" names the run x, as "runs/x" does.
    fs::path named = fs::path(info.directory).lexically_normal();
    if (named.filename().empty())
        named = named.parent_path();
    info.runName = named.filename().string();
    info.logPath = m_logs.empty() ? m_location : m_logs.front().path;
    SourceDescription& source = info.source;

    // Every series of every log, by run-format name; the longest wins, the first log on a tie.
    std::map<std::string, Candidate> chosen;
    // Every log's points of a run-format name, in log order: the wall times of the one training
    // series are looked up there afterwards (indexing every series' times cost a fifth of opening a
    // 100,000-step event file).
    std::map<std::string, std::vector<const std::vector<ScalarPoint>*>> pointsByName;
    std::vector<LoggedEvent> events;
    size_t histogramTags = 0;
    for (size_t i = 0; i < m_logs.size(); ++i) {
        ScalarLog& log = m_logs[i];
        std::vector<std::string> files{log.path};
        files.insert(files.end(), log.alsoRead.begin(), log.alsoRead.end());
        for (const std::string& file : files)
            if (std::find(source.files.begin(), source.files.end(), file) == source.files.end())
                source.files.push_back(file);
        if (!log.format.empty() && source.format.find(log.format) == std::string::npos)
            source.format += (source.format.empty() ? "" : " + ") + log.format;
        size_t repeats = 0;
        for (const auto& [logged, points] : log.series) {
            pointsByName[canonicalScalarName(logged)].push_back(&points);
            Candidate c = ordered(logged, i, points, repeats);
            auto it = chosen.find(c.canonical);
            if (it == chosen.end() || c.steps.size() > it->second.steps.size())
                chosen[c.canonical] = std::move(c);
        }
        if (repeats > 0)
            source.notes.push_back(labelOf(log) + ": " + std::to_string(repeats) +
                                   " values logged again at a step already logged (a resumed run); the last one "
                                   "is shown");
        for (const auto& [key, value] : log.attributes)
            info.attributes.emplace(key, value);
        events.insert(events.end(), log.events.begin(), log.events.end());
        histogramTags += log.histograms.size();
        source.warnings.insert(source.warnings.end(), log.warnings.begin(), log.warnings.end());
        // A log merged from several files has its notes named by file already.
        for (const std::string& note : log.notes)
            source.notes.push_back(log.alsoRead.empty() ? fileName(log.path) + ": " + note : note);
    }
    if (histogramTags > 0)
        source.notes.push_back(std::to_string(histogramTags) +
                               " histogram tags read; their ranges are not plotted yet");
    chooseStandInLoss(chosen, source, info);
    addWallTime(chosen, pointsByName);
    for (const auto& [name, c] : chosen) {
        if (c.logged != name && isKnownScalarName(name))
            source.notes.push_back(name + " is " + labelOf(m_logs[c.logIndex]) + "'s \"" + c.logged + "\"");
    }

    auto memory = std::make_unique<MemoryRunSource>();
    addSeriesTables(*memory, chosen);
    if (!events.empty()) {
        std::stable_sort(events.begin(), events.end(),
                         [](const LoggedEvent& a, const LoggedEvent& b) { return a.step < b.step; });
        std::vector<int64_t> steps;
        std::vector<std::string> kinds, messages;
        for (const LoggedEvent& e : events) {
            steps.push_back(e.step);
            kinds.push_back(e.kind);
            messages.push_back(e.message);
        }
        memory->addEvents(std::move(steps), std::move(kinds), std::move(messages));
    }
    for (MatrixTable& table : m_matrixTables)
        memory->addMatrixTable(table.name, std::move(table.columns), std::move(table.steps),
                               std::move(table.datasets));

    info.checkpoints = m_checkpoints;
    info.tables = memory->info().tables;
    source.warnings.insert(source.warnings.end(), m_warnings.begin(), m_warnings.end());
    source.notes.insert(source.notes.end(), m_notes.begin(), m_notes.end());
    if (source.format.empty())
        source.format = "folder of checkpoints";
    info.attributes.emplace("format", source.format);
    describeContents(info);
    memory->mutableInfo() = std::move(info);
    return memory;
}

} // namespace nanscope
