// Checkpoint by checkpoint: each is read, reduced to a few figures per tensor and dropped; only
// the previous checkpoint's parameters outlive their turn, for the update ratios. The tables are
// assembled from the figures at the end, once it is known which tensors every checkpoint holds.
#include "core/importers/CheckpointSeries.h"

#include "core/checkpoint/CheckpointDiff.h"
#include "core/importers/CheckpointFiles.h"
#include "core/importers/CheckpointTables.h"
#include "core/tensor/BatchNormHealth.h"
#include "core/tensor/TensorStats.h"

#include <cmath>
#include <limits>
#include <set>

namespace nanscope {

namespace {

using namespace checkpointtables;

// The previous readable checkpoint's parameters: in memory while they fit the budget, else where
// to read them again.
struct PreviousParameters
{
    int64_t step = 0;
    std::vector<std::string> files;
    std::map<std::string, size_t> fileOf; // parameter -> index into files
    std::map<std::string, TensorView> kept;
    bool keptAll = true;
    int64_t keptBytes = 0;
    int64_t budget = kKeepPreviousParameterBytes;

    void remember(const NamedTensor& parameter, size_t fileIndex)
    {
        fileOf[parameter.name] = fileIndex;
        if (!keptAll)
            return;
        keptBytes += parameter.tensor.numel() * int64_t(dtypeSize(parameter.tensor.dtype));
        if (keptBytes > budget) {
            keptAll = false;
            kept.clear();
            return;
        }
        kept[parameter.name] = parameter.tensor;
    }
};

double ratioOf(const TensorDiff& diff)
{
    if (diff.relativeUpdate)
        return *diff.relativeUpdate;
    const bool noFiniteElement = (diff.nonfiniteA > 0 && diff.normA == 0) || (diff.nonfiniteB > 0 && diff.normB == 0);
    if (noFiniteElement)
        return std::numeric_limits<double>::quiet_NaN();
    return diff.diffNorm > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

void addUpdates(const CheckpointDiff& diff, std::map<std::string, UpdateFigures>& updates)
{
    for (const TensorDiff& tensor : diff.tensors)
        if (tensor.comparable)
            updates[tensor.name] = UpdateFigures { tensor.diffNorm, ratioOf(tensor) };
}

// How far each of `parameters` (one file of the current checkpoint) moved since `previous`.
Status diffAgainstPrevious(const std::vector<NamedTensor>& parameters, const PreviousParameters& previous,
    std::map<std::string, UpdateFigures>& updates)
{
    if (previous.keptAll) {
        Checkpoint before, after;
        for (const NamedTensor& parameter : parameters)
            if (const auto it = previous.kept.find(parameter.name); it != previous.kept.end()) {
                before.tensors.push_back({ parameter.name, it->second });
                after.tensors.push_back(parameter);
            }
        addUpdates(diffCheckpoints(before, after), updates);
        return Status::success();
    }
    // Too large to have been kept: read the previous checkpoint's files again, one at a time, each
    // for the parameters of this file it holds.
    std::map<size_t, Checkpoint> afterByFile;
    for (const NamedTensor& parameter : parameters)
        if (const auto it = previous.fileOf.find(parameter.name); it != previous.fileOf.end())
            afterByFile[it->second].tensors.push_back(parameter);
    for (auto& [fileIndex, after] : afterByFile) {
        auto model = readModelTensors(previous.files[fileIndex]);
        if (!model)
            return Error { model.error() };
        std::map<std::string, const NamedTensor*> wanted;
        for (const NamedTensor& parameter : after.tensors)
            wanted[parameter.name] = &parameter;
        Checkpoint before, matched;
        for (NamedTensor& tensor : model->tensors)
            if (const auto it = wanted.find(tensor.name); it != wanted.end()) {
                matched.tensors.push_back(*it->second);
                before.tensors.push_back(std::move(tensor));
            }
        addUpdates(diffCheckpoints(before, matched), updates);
    }
    return Status::success();
}

// "bn1.running_var" -> module "bn1"; false for a tensor that is no running statistic.
bool runningStatisticModule(const std::string& name, std::string& module, bool& isVariance)
{
    if (!batchnorm::isRunningStatisticName(name))
        return false;
    isVariance = batchnorm::isRunningVarianceName(name);
    const size_t suffix = std::string(isVariance ? "running_var" : "running_mean").size();
    module = name.size() > suffix ? name.substr(0, name.size() - suffix - 1) : name;
    return true;
}

double finiteOrNaN(const std::optional<double>& value)
{
    return value ? *value : std::numeric_limits<double>::quiet_NaN();
}

// A note that every checkpoint repeats ("18 tensors outside state_dict") is written once, with a
// count, so a run of a hundred checkpoints does not bury the other notes.
class RepeatedNotes
{
public:
    void add(const std::string& where, const std::string& what)
    {
        const auto [it, fresh] = m_index.try_emplace(what, m_entries.size());
        if (fresh)
            m_entries.push_back({ where + ": " + what, 0 });
        else
            ++m_entries[it->second].second;
    }
    void appendTo(std::vector<std::string>& notes) const
    {
        for (const auto& [text, more] : m_entries)
            notes.push_back(more == 0 ? text : text + " (the same in " + std::to_string(more) + " more checkpoints)");
    }

private:
    std::map<std::string, size_t> m_index;
    std::vector<std::pair<std::string, size_t>> m_entries;
};

struct Reading
{
    const ProgressCallback& progress;
    double begin = 0, width = 1; // of the whole series' progress
    RepeatedNotes& notes;
    std::vector<std::string>& warnings;
    int64_t keepPreviousBytes = kKeepPreviousParameterBytes;
    bool cancelled = false;
};

// One checkpoint's figures; on success `next` holds its parameters for the next checkpoint's
// updates. A failure leaves nothing behind but the error.
Result<CheckpointFigures> readOneCheckpoint(int64_t step, const std::string& path, const PreviousParameters* previous,
    PreviousParameters& next, Reading& reading)
{
    auto files = findCheckpointFiles(path);
    if (!files)
        return Error { files.error() };
    CheckpointFigures figures;
    figures.step = step;
    if (previous) {
        figures.hasUpdates = true;
        figures.baseStep = previous->step;
    }
    std::vector<std::pair<std::string, std::string>> notes; // where, what: kept only if the checkpoint is read
    for (const std::string& note : files->notes)
        notes.push_back({ path, note });
    next = PreviousParameters {};
    next.budget = reading.keepPreviousBytes;
    next.step = step;
    next.files = files->files;
    std::map<std::string, BufferHalves> halves;
    std::set<std::string> seen;

    for (size_t f = 0; f < files->files.size(); ++f) {
        const std::string& file = files->files[f];
        const double fraction = reading.begin + reading.width * double(f) / double(files->files.size());
        if (!reportProgress(reading.progress, fraction, "step " + std::to_string(step) + ": " + file)) {
            reading.cancelled = true;
            return Error { "reading checkpoints cancelled" };
        }
        auto model = readModelTensors(file);
        if (!model)
            return Error { model.error() };
        figures.inModelOrder = figures.inModelOrder && model->inModelOrder;
        if (model->droppedOutsideStateDict > 0)
            notes.push_back({ file,
                std::to_string(model->droppedOutsideStateDict)
                    + " tensors outside state_dict (optimizer state, callbacks) are not weights; not read" });

        std::vector<NamedTensor> parameters, statistics;
        for (NamedTensor& tensor : model->tensors) {
            if (!isFloatingPoint(tensor.tensor.dtype))
                continue; // num_batches_tracked, token ids: counters and tables, not weights
            if (!seen.insert(tensor.name).second) {
                notes.push_back({ file, "tensor '" + tensor.name + "' already read from an earlier file; skipped" });
                continue;
            }
            std::string module;
            bool isVariance = false;
            (runningStatisticModule(tensor.name, module, isVariance) ? statistics : parameters).push_back(tensor);
        }
        model->tensors.clear(); // what is not kept above is freed here

        std::vector<NamedTensor> measured = parameters;
        measured.insert(measured.end(), statistics.begin(), statistics.end());
        auto stats = computeCheckpointStats(measured);
        if (!stats)
            return Error { file + ": " + stats.error() };
        for (size_t i = 0; i < parameters.size(); ++i) {
            const TensorStats& s = (*stats)[i];
            figures.parameterOrder.push_back(s.name);
            figures.parameters[s.name] = ParameterFigures { s.shape, s.norm, s.nonfinite() };
        }
        for (size_t i = parameters.size(); i < measured.size(); ++i) {
            const TensorStats& s = (*stats)[i];
            std::string module;
            bool isVariance = false;
            runningStatisticModule(s.name, module, isVariance);
            BufferHalves& half = halves[module];
            if (!half.listed) {
                half.listed = true;
                figures.bufferOrder.push_back(module);
            }
            (isVariance ? half.variance : half.mean)
                = BufferHalf { finiteOrNaN(s.min), finiteOrNaN(s.max), s.nonfinite() };
        }

        if (previous && figures.hasUpdates) {
            if (Status diffed = diffAgainstPrevious(parameters, *previous, figures.updates); !diffed) {
                figures.hasUpdates = false;
                figures.updates.clear();
                reading.warnings.push_back("step " + std::to_string(step) + ": the update since step "
                    + std::to_string(previous->step)
                    + " is left out: its checkpoint could not be read again: " + diffed.error());
            }
        }
        for (const NamedTensor& parameter : parameters)
            next.remember(parameter, f);
    }
    figures.buffers = completeBuffers(halves, figures.bufferOrder);
    for (const auto& [where, what] : notes)
        reading.notes.add(where, what);
    return figures;
}

} // namespace

Result<CheckpointSeries> readCheckpointSeries(const std::map<int64_t, std::string>& checkpoints,
    const ProgressCallback& progress, int64_t keepPreviousParameterBytes)
{
    if (checkpoints.empty())
        return Error { "no checkpoints to read" };
    CheckpointSeries series;
    std::vector<CheckpointFigures> rows;
    PreviousParameters previous, next;
    bool havePrevious = false;
    RepeatedNotes notes;
    size_t index = 0;
    for (const auto& [step, path] : checkpoints) {
        Reading reading { progress, double(index) / double(checkpoints.size()), 1.0 / double(checkpoints.size()), notes,
            series.warnings, keepPreviousParameterBytes };
        ++index;
        try {
            auto figures = readOneCheckpoint(step, path, havePrevious ? &previous : nullptr, next, reading);
            if (!figures) {
                if (reading.cancelled)
                    return Error { figures.error() };
                series.warnings.push_back("step " + std::to_string(step) + ": " + figures.error()
                    + "; the checkpoint is left out"
                    + (havePrevious ? ", and the next update is measured from step " + std::to_string(previous.step)
                                    : std::string()));
                next = PreviousParameters {}; // a partly read checkpoint's tensors are freed at once
                continue;
            }
            rows.push_back(std::move(*figures));
        } catch (const std::bad_alloc&) {
            series.warnings.push_back("step " + std::to_string(step) + ": " + path
                + ": out of memory while reading; the checkpoint is left out");
            next = PreviousParameters {};
            continue;
        }
        previous = std::move(next);
        next = PreviousParameters {};
        havePrevious = true;
    }
    if (!reportProgress(progress, 1.0, "checkpoints read"))
        return Error { "reading checkpoints cancelled" };
    if (rows.empty())
        return Error { "none of the " + std::to_string(checkpoints.size()) + " checkpoints could be read; "
            + series.warnings.front() };
    notes.appendTo(series.notes);
    assembleTables(rows, series);
    return series;
}

} // namespace nanscope
