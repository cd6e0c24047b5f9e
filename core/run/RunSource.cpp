#include "core/run/RunSource.h"

#include "core/run/CheckpointPairing.h"
#include "core/run/RunFormat.h"

#include <algorithm>

namespace nanscope {

namespace rf = runformat;

std::vector<int64_t> RunInfo::replayableSteps() const
{
    std::vector<int64_t> steps;
    for (const auto& [step, path] : checkpoints)
        if (whyNotReplayable(step).empty())
            steps.push_back(step);
    return steps;
}

std::string RunInfo::whyNotReplayable(int64_t step) const
{
    const std::string n = std::to_string(step);
    // Replay reproduces step N on checkpoint N only (CheckpointPairing): an earlier one is triage's.
    if (const auto paired = checkpointForStep(checkpoints, step); !paired || !paired->ownStep)
        return "no checkpoint of step " + n + " was saved";
    // A state_dict replays eagerly when the run names how to rebuild its model.
    if (auto form = checkpointForms.find(step); form != checkpointForms.end() && !replaysEagerly())
        if (const std::string why = whyFormCannotReplay(form->second); !why.empty())
            return "checkpoint " + n + " " + why;
    if (!batches.count(step))
        return "no batch of step " + n + " was saved";
    return {};
}

bool RunInfo::replaysEagerly() const
{
    const auto factory = attributes.find(rf::kModelFactoryAttribute);
    return factory != attributes.end() && !factory->second.empty();
}

std::string RunInfo::eagerReplayFactory() const
{
    if (!replaysEagerly())
        return {};
    for (const auto& [step, form] : checkpointForms)
        if (form.kind == CheckpointForm::Kind::StateDict)
            return attributes.at(rf::kModelFactoryAttribute);
    return {};
}

bool RunInfo::hasExportedPrograms() const
{
    for (const auto& [step, form] : checkpointForms)
        if (form.kind == CheckpointForm::Kind::Exported)
            return true;
    return false;
}

std::string RunInfo::whyNothingReplays() const
{
    if (!replayableSteps().empty())
        return {};
    if (batches.empty())
        return "no saved batches: replay is unavailable (it runs a saved batch through the checkpoint of the "
               "same step)";
    for (const auto& [step, path] : batches)
        if (checkpoints.count(step))
            return "replay is unavailable: " + whyNotReplayable(step);
    return "no step has both a checkpoint and a batch: replay is unavailable";
}

const TableInfo* RunInfo::table(const std::string& name) const
{
    for (const auto& t : tables)
        if (t.name == name)
            return &t;
    return nullptr;
}

namespace {

std::string joined(const std::vector<std::string>& words, size_t most)
{
    std::string text;
    for (size_t i = 0; i < words.size() && i < most; ++i)
        text += (i ? ", " : "") + words[i];
    if (words.size() > most)
        text += " and " + std::to_string(words.size() - most) + " more";
    return text;
}

bool hasRows(const RunInfo& info, const char* table)
{
    const TableInfo* t = info.table(table);
    return t && t->rows > 0;
}

} // namespace

void describeContents(RunInfo& info)
{
    SourceDescription& source = info.source;
    source.holds.clear();
    source.lacks.clear();
    for (const TableInfo& table : info.tables) {
        if (table.rows == 0)
            continue;
        if (table.name == rf::kEvents) {
            source.holds.push_back(std::to_string(table.rows) + " events (skipped steps, loss-scale changes, ...)");
            continue;
        }
        const std::string what = table.names.empty()
                                     ? joined(table.datasets, 6)
                                     : std::to_string(table.names.size()) + " columns (" + joined(table.datasets, 4) + ")";
        source.holds.push_back("/" + table.name + ": " + what + " on " + std::to_string(table.rows) + " steps");
    }
    // Which series the scan judges as the training loss, when the log named none `loss`
    // (core/importers/TrainingLoss): said wherever the source is described.
    if (auto it = info.attributes.find("loss_source"); it != info.attributes.end())
        source.holds.push_back("the training loss judged: " + it->second);
    if (!info.checkpoints.empty())
        source.holds.push_back(std::to_string(info.checkpoints.size()) + " checkpoints");
    if (!info.batches.empty())
        source.holds.push_back(std::to_string(info.batches.size()) + " saved batches");

    if (!hasRows(info, rf::kScalars))
        source.lacks.push_back("no training scalars: no loss or gradient-norm plot, and the scan has nothing to read");
    if (!hasRows(info, rf::kLayers))
        source.lacks.push_back("no per-layer gradient norms: the layer tree and heatmap are empty, and incidents "
                               "cannot name a first bad layer");
    if (!hasRows(info, rf::kBuffers))
        source.lacks.push_back("no BatchNorm running statistics");
    if (info.checkpoints.empty())
        source.lacks.push_back("no checkpoints: nothing to inspect tensor by tensor");
    if (const std::string why = info.whyNothingReplays(); !why.empty())
        source.lacks.push_back(why);
}

std::string sourceSummary(const RunInfo& info)
{
    if (info.source.format.empty() || info.source.format == rf::kNativeSourceFormat)
        return {};
    std::string line = "Read from " + info.source.format;
    if (auto it = info.attributes.find("loss_source"); it != info.attributes.end())
        line += " (the loss judged: " + it->second + ")";
    std::string lacks;
    for (const std::string& lack : info.source.lacks)
        lacks += (lacks.empty() ? "" : "; ") + lack;
    if (!lacks.empty())
        line += ". It has " + lacks;
    if (!info.source.warnings.empty())
        line += ". " + std::to_string(info.source.warnings.size()) + " part(s) were damaged (hover for details)";
    return line + ".";
}

std::string sourceDetails(const RunInfo& info)
{
    std::string text;
    auto section = [&](const char* title, const std::vector<std::string>& lines) {
        if (lines.empty())
            return;
        text += std::string(text.empty() ? "" : "\n") + title + ":\n";
        for (const std::string& line : lines)
            text += "  - " + line + "\n";
    };
    section("files", info.source.files);
    section("holds", info.source.holds);
    section("lacks", info.source.lacks);
    section("warnings", info.source.warnings);
    section("notes", info.source.notes);
    return text;
}

} // namespace nanscope
