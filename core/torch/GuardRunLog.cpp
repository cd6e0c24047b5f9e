#include "core/torch/GuardRunLog.h"

#include "core/run/RunFormat.h"
#include "core/torch/TorchReductions.h"

#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <set>

namespace nanscope::guardrunlog {

namespace fs = std::filesystem;
namespace rf = runformat;

namespace {

// The /scalars columns the Guard computes itself, in run.h5's order: the ones both recorders
// compute (run_format.json's recorder_scalars), then the learning rate when the optimizer says it,
// and its count of updates when it keeps one (optimizer_scalars).
// A user's scalar may not take these names.
constexpr const char* kLearningRate = "lr";

} // namespace

RunSchema runSchema(const GuardOptions& options, const std::string& runDirectory, const guardmodel::ModelAccess& model,
                    const FirstStepColumns& columns)
{
    RunSchema schema;
    std::string runName = options.runName;
    if (runName.empty()) {
        fs::path p = fs::path(runDirectory).lexically_normal();
        runName = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
    }
    schema.attributes = {{"run_name", runName},
                         {"framework", std::string("libtorch ") + TORCH_VERSION + " (nanscope::Guard)"},
                         {"amp_dtype", options.ampDtype}};
    if (!options.lossName.empty())
        schema.attributes["loss_name"] = options.lossName;
    for (const auto& [key, value] : options.attributes)
        schema.attributes[key] = value;
    schema.scalars.clear(); // RunSchema starts with "loss", which is the first of these
    for (const char* name : rf::kRecorderScalars)
        schema.scalars.push_back(name);
    if (columns.logLearningRate)
        schema.scalars.push_back(kLearningRate);
    if (columns.logOptimizerStep)
        schema.scalars.push_back(rf::scalar::kOptimizerStep);
    for (const auto& name : columns.userScalars)
        schema.scalars.push_back(name);
    for (const auto& p : model.parameters)
        schema.layers.push_back(p.name);
    for (const auto& column : columns.activations) {
        schema.activations.push_back(column);
        const auto kind = columns.activationKinds.find(column);
        schema.activationKinds.push_back(kind == columns.activationKinds.end() ? std::string() : kind->second);
    }
    for (const auto& layer : model.norms)
        schema.buffers.push_back(layer.path.empty() ? "(model)" : layer.path);
    schema.inputs = columns.inputs;
    return schema;
}

std::map<std::string, double> userScalarRow(const std::map<std::string, double>& given,
                                            const std::vector<std::string>& logged, int64_t step,
                                            std::vector<std::string>& notLogged)
{
    static const std::set<std::string> reserved = [] {
        std::set<std::string> names(std::begin(rf::kRecorderScalars), std::end(rf::kRecorderScalars));
        names.insert(kLearningRate);
        names.insert(rf::scalar::kOptimizerStep);
        return names;
    }();
    std::map<std::string, double> row;
    for (const auto& [name, value] : given) {
        if (reserved.count(name))
            throw GuardError("nanscope::Guard::endStep: scalar '" + name +
                             "' is computed by the Guard; log your own value under another name");
        if (std::find(logged.begin(), logged.end(), name) != logged.end())
            row[name] = value;
        else
            notLogged.push_back(name);
    }
    for (const auto& name : logged)
        if (!row.count(name))
            throw GuardError("nanscope::Guard::endStep(step " + std::to_string(step) + "): scalar '" + name +
                             "' was logged from the first step on and must be given at every step");
    return row;
}

std::optional<Row> inputsRow(const std::vector<std::string>& columns, const guardreadback::NamedSlots& inputSlots,
                             const double* slots, int64_t step, std::string& whyNot)
{
    std::vector<std::string> names;
    for (const auto& [name, s] : inputSlots)
        names.push_back(name);
    if (names != columns) {
        whyNot = "inputs not logged at step " + std::to_string(step) + ": the first step gave " +
                 std::to_string(columns.size()) + " input tensor(s), this one " + std::to_string(names.size());
        return std::nullopt;
    }
    std::vector<TensorStats> stats;
    for (size_t i = 0; i < names.size(); ++i)
        stats.push_back(guardreadback::statsOf(slots + i * torchstats::kSlots));
    return guardreadback::rangeRow(stats);
}

Row activationsRow(const std::vector<std::string>& columns, const guardreadback::NamedSlots& observed,
                   const double* slots, int64_t step, std::string& notRun)
{
    std::map<std::string, std::vector<const double*>> byModule;
    for (size_t i = 0; i < observed.size(); ++i)
        byModule[observed[i].first].push_back(slots + i * torchstats::kSlots);
    std::vector<TensorStats> stats;
    std::vector<std::string> missing;
    for (const auto& column : columns) {
        auto it = byModule.find(column);
        if (it == byModule.end()) {
            missing.push_back(column);
            stats.emplace_back(); // no element: no finite figure, no non-finite count
            continue;
        }
        stats.push_back(guardreadback::statsOf(guardreadback::mergeSlots(it->second).data()));
    }
    notRun.clear();
    if (!missing.empty()) {
        notRun = "module(s) ";
        for (size_t i = 0; i < missing.size() && i < 5; ++i)
            notRun += (i ? ", " : "") + missing[i];
        notRun += " did not run at step " + std::to_string(step) +
                  ": their activation cells hold no value there (NaN ranges, zero counts), as at any step where a "
                  "module does not run";
    }
    return guardreadback::rangeRow(stats);
}

} // namespace nanscope::guardrunlog
