#include "core/importers/OptimizerState.h"
#include "core/NumberText.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/importers/CheckpointFiles.h"
#include "core/tensor/BatchNormHealth.h"
#include "core/tensor/ElementConversion.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace nanscope {

namespace {

// A number as torch.save writes one: a Python int or float, or (newer torch, capturable or
// tensor learning rates) a one-element tensor.
std::optional<double> numberOf(const PickledValue* value)
{
    if (!value)
        return std::nullopt;
    switch (value->kind) {
    case PickledValue::Kind::Int:
        return double(value->integer);
    case PickledValue::Kind::Double:
        return value->real;
    case PickledValue::Kind::Bool:
        return value->boolean ? 1.0 : 0.0;
    case PickledValue::Kind::Tensor:
        if (value->tensor && value->tensor->numel() == 1) {
            std::vector<uint8_t> copy;
            return elementAsDouble(contiguousElements(*value->tensor, copy), value->tensor->dtype, 0);
        }
        return std::nullopt;
    default:
        return std::nullopt;
    }
}

const TensorView* tensorOf(const PickledValue& state, const char* key)
{
    const PickledValue* value = state.find(key);
    return value && value->isTensor() && value->tensor && isFloatingPoint(value->tensor->dtype) ? value->tensor.get()
                                                                                                : nullptr;
}

struct ElementReader
{
    explicit ElementReader(const TensorView& tensor)
        : dtype(tensor.dtype)
        , data(contiguousElements(tensor, copy))
    {
    }
    double operator[](int64_t i) const { return elementAsDouble(data, dtype, i); }
    std::vector<uint8_t> copy;
    DType dtype;
    const uint8_t* data;
};

double rms(double sumOfSquares, int64_t count)
{
    return count > 0 ? std::sqrt(sumOfSquares / double(count)) : 0.0;
}

// The moments of one parameter's Adam state, and the update they make.
void measureAdamState(const PickledValue& state, const OptimizerGroup& group, OptimizerParameterState& out)
{
    const TensorView* expAvg = tensorOf(state, "exp_avg");
    const TensorView* expAvgSq = tensorOf(state, "max_exp_avg_sq"); // amsgrad divides by the running maximum
    if (!expAvgSq)
        expAvgSq = tensorOf(state, "exp_avg_sq");
    if (!expAvg || !expAvgSq || expAvg->numel() != expAvgSq->numel())
        return;
    const ElementReader m(*expAvg), v(*expAvgSq);
    const int64_t n = expAvg->numel();

    // Bias correction and the update need every group figure and a step past 0.
    const bool canUpdate = out.step && *out.step >= 1 && group.lr && group.eps && group.beta1 && group.beta2;
    const double correction1 = canUpdate ? 1 - std::pow(*group.beta1, *out.step) : 1;
    const double correction2 = canUpdate ? 1 - std::pow(*group.beta2, *out.step) : 1;
    const double lr = group.lr.value_or(0), eps = group.eps.value_or(0);

    double sumM = 0, sumV = 0, sumUpdate = 0;
    int64_t finiteM = 0, finiteV = 0, finiteUpdate = 0, dominated = 0, judged = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double mi = m[i], vi = v[i];
        const bool mOk = std::isfinite(mi), vOk = std::isfinite(vi) && vi >= 0;
        out.nonfiniteExpAvg += !std::isfinite(mi);
        out.nonfiniteExpAvgSq += !std::isfinite(vi);
        if (mOk) {
            sumM += mi * mi;
            ++finiteM;
        }
        if (vOk) {
            sumV += vi;
            ++finiteV;
        }
        if (!canUpdate || !mOk || !vOk)
            continue;
        const double rootVHat = std::sqrt(vi / correction2);
        const double update = lr * (mi / correction1) / (rootVHat + eps);
        ++judged;
        dominated += rootVHat <= eps;
        if (std::isfinite(update)) {
            sumUpdate += update * update;
            ++finiteUpdate;
        }
    }
    out.nonfinite = out.nonfiniteExpAvg + out.nonfiniteExpAvgSq;
    out.expAvgRms = rms(sumM, finiteM);
    out.expAvgSqRootRms = finiteV > 0 ? std::sqrt(sumV / double(finiteV)) : 0.0;
    if (canUpdate && n > 0 && correction1 > 0 && correction2 > 0) {
        out.updateRms = rms(sumUpdate, finiteUpdate);
        out.epsilonDominatedShare = judged > 0 ? double(dominated) / double(judged) : 0.0;
    }
}

bool sameShapes(
    const std::vector<const OptimizerParameterState*>& slots, const std::vector<const ModelParameter*>& model)
{
    if (slots.size() != model.size())
        return false;
    for (size_t k = 0; k < slots.size(); ++k)
        if (slots[k]->hasState && slots[k]->shape != model[k]->shape)
            return false;
    return true;
}

// Names for the optimizer's parameters, or why there are none. Parameters without state carry no
// shape and match any. Every layout the shapes fit is tried; when two fit with different names the
// mapping is ambiguous and no names are given, since a wrong name is worse than none.
std::string mapNames(OptimizerStateSummary& summary, const std::vector<ModelParameter>& model, bool shapesKnown)
{
    using Assignment = std::vector<const ModelParameter*>; // per entry of summary.parameters
    std::vector<const OptimizerParameterState*> all;
    for (const OptimizerParameterState& p : summary.parameters)
        all.push_back(&p);
    std::vector<const ModelParameter*> modelOrder;
    for (const ModelParameter& parameter : model)
        modelOrder.push_back(&parameter);
    if (model.empty())
        return "no model parameter names were given";
    if (all.size() != model.size())
        return "the optimizer holds " + std::to_string(all.size()) + " parameters and the model "
            + std::to_string(model.size()) + " (frozen parameters, or a different model)";
    if (!shapesKnown) {
        if (summary.groups.size() != 1)
            return "the optimizer has " + std::to_string(summary.groups.size())
                + " param groups and no model shapes were given to tell their order";
        for (size_t k = 0; k < all.size(); ++k)
            summary.parameters[k].name = modelOrder[k]->name;
        return {};
    }

    std::vector<std::pair<std::string, Assignment>> fits;
    if (sameShapes(all, modelOrder))
        fits.push_back({ "the param groups in model order", modelOrder });
    if (summary.groups.size() == 2) {
        // The Hugging Face Trainer: weights with decay first, then biases and LayerNorm weights,
        // each in model order. Norm weights are told by being 1-D; older transformers decayed
        // RMSNorm weights, hence the second rule (every non-bias decays).
        using Rule = bool (*)(const ModelParameter&);
        const Rule rules[] = {
            [](const ModelParameter& p) { return p.name.find("bias") == std::string::npos && p.shape.size() >= 2; },
            [](const ModelParameter& p) { return p.name.find("bias") == std::string::npos; },
        };
        for (Rule decayed : rules) {
            Assignment assignment;
            for (const ModelParameter* p : modelOrder)
                if (decayed(*p))
                    assignment.push_back(p);
            const size_t decayCount = assignment.size();
            for (const ModelParameter* p : modelOrder)
                if (!decayed(*p))
                    assignment.push_back(p);
            // summary.parameters lists group 0, then group 1: the same concatenation.
            if (decayCount == summary.groups[0].parameterIndices.size() && sameShapes(all, assignment))
                fits.push_back(
                    { "the Hugging Face Trainer's grouping (weights with decay, then biases and norm weights)",
                        assignment });
        }
    }
    for (size_t k = 1; k < fits.size(); ++k)
        if (fits[k].second != fits[0].second)
            return "the shapes fit both " + fits[0].first + " and " + fits[k].first + ", which name them differently";
    if (fits.empty())
        return "the shapes of the optimizer's parameters follow neither the model's order nor the Hugging Face "
               "Trainer's grouping";
    for (size_t k = 0; k < all.size(); ++k)
        summary.parameters[k].name = fits[0].second[k]->name;
    if (fits[0].first.rfind("the Hugging", 0) == 0)
        summary.notes.push_back(summary.path + ": names matched by " + fits[0].first);
    return {};
}

Result<OptimizerStateSummary> summarise(
    const std::string& path, const std::vector<ModelParameter>& model, bool shapesKnown)
{
    auto root = readPickledFile(path);
    if (!root)
        return Error { root.error() };
    OptimizerStateSummary summary;
    summary.path = path;
    const PickledValue* optimizer = &*root;
    if (const PickledValue* states = root->find("optimizer_states")) { // a Lightning checkpoint
        if (states->kind != PickledValue::Kind::List || states->items.empty())
            return Error { path + ": optimizer_states holds no optimizer state" };
        if (states->items.size() > 1)
            summary.notes.push_back(path + ": " + std::to_string(states->items.size())
                + " optimizers; only the first (optimizer_states[0]) is read");
        optimizer = &states->items.front();
    }
    const PickledValue* state = optimizer->find("state");
    const PickledValue* groups = optimizer->find("param_groups");
    if (!state || state->kind != PickledValue::Kind::Dict || !groups || groups->kind != PickledValue::Kind::List)
        return Error { path
            + ": not an optimizer state: no 'state' and 'param_groups' (torch.save(optimizer.state_dict())), "
              "nor a Lightning checkpoint with optimizer_states" };

    std::map<int64_t, const PickledValue*> stateOf;
    for (const auto& [key, value] : state->entries)
        if (key.kind == PickledValue::Kind::Int && value.kind == PickledValue::Kind::Dict)
            stateOf[key.integer] = &value;
    std::set<int64_t> listed;
    for (const PickledValue& entry : groups->items) {
        OptimizerGroup group;
        group.lr = numberOf(entry.find("lr"));
        group.eps = numberOf(entry.find("eps"));
        group.weightDecay = numberOf(entry.find("weight_decay"));
        if (const PickledValue* betas = entry.find("betas"); betas && betas->items.size() == 2) {
            group.beta1 = numberOf(&betas->items[0]);
            group.beta2 = numberOf(&betas->items[1]);
        }
        if (const PickledValue* params = entry.find("params"))
            for (const PickledValue& index : params->items)
                if (index.kind == PickledValue::Kind::Int && listed.insert(index.integer).second)
                    group.parameterIndices.push_back(index.integer);
        summary.groups.push_back(std::move(group));
    }

    std::set<std::string> otherKeys;
    size_t withoutState = 0;
    for (size_t g = 0; g < summary.groups.size(); ++g)
        for (int64_t index : summary.groups[g].parameterIndices) {
            OptimizerParameterState p;
            p.index = index;
            p.group = g;
            const auto it = stateOf.find(index);
            if (it != stateOf.end()) {
                const PickledValue& entry = *it->second;
                p.hasState = true;
                p.step = numberOf(entry.find("step"));
                for (const auto& [key, value] : entry.entries) {
                    if (value.isTensor() && value.tensor->numel() > 1 && p.shape.empty())
                        p.shape = value.tensor->shape;
                    if (key.kind == PickledValue::Kind::String && key.text != "step")
                        otherKeys.insert(key.text);
                }
                if (const TensorView* moment = tensorOf(entry, "exp_avg"))
                    p.shape = moment->shape;
                summary.isAdam = summary.isAdam || tensorOf(entry, "exp_avg_sq");
                measureAdamState(entry, summary.groups[g], p);
            } else {
                ++withoutState;
            }
            p.name = "param #" + std::to_string(index) + (p.hasState ? " " + shapeText(p.shape) : std::string());
            summary.parameters.push_back(std::move(p));
        }

    if (!summary.isAdam && !stateOf.empty()) {
        std::string keys;
        for (const std::string& key : otherKeys)
            keys += (keys.empty() ? "" : ", ") + key;
        summary.notes.push_back(path + ": not an Adam-family optimizer (no exp_avg_sq in its state; it holds "
            + (keys.empty() ? std::string("nothing but step") : keys) + "): no moments or update sizes to show");
    }
    if (withoutState > 0)
        summary.notes.push_back(path + ": " + std::to_string(withoutState)
            + " parameters have no optimizer state yet (no gradient reached them before the save)");
    if (stateOf.size() > listed.size())
        summary.warnings.push_back(path + ": " + std::to_string(stateOf.size() - listed.size())
            + " state entries belong to no param group; ignored");
    const std::string why = mapNames(summary, model, shapesKnown);
    summary.namesMapped = why.empty();
    if (!summary.namesMapped)
        summary.notes.push_back(path + ": parameters are named by the optimizer's index: " + why);
    for (const OptimizerParameterState& p : summary.parameters) // after mapNames: by the model's name where known
        if (p.nonfinite > 0) {
            summary.warnings.push_back(
                path + ": " + p.name + ": " + std::to_string(p.nonfinite) + " non-finite elements in its Adam moments");
        }
    return summary;
}

} // namespace

Result<OptimizerStateSummary> readOptimizerState(
    const std::string& path, const std::vector<ModelParameter>& parametersInOrder)
{
    try {
        return summarise(path, parametersInOrder, true);
    } catch (const std::bad_alloc&) {
        return Error { path + ": out of memory while reading the optimizer state" };
    }
}

Result<OptimizerStateSummary> readOptimizerState(
    const std::string& path, const std::vector<std::string>& parameterNamesInOrder)
{
    std::vector<ModelParameter> parameters;
    for (const std::string& name : parameterNamesInOrder)
        parameters.push_back({ name, {} });
    try {
        return summarise(path, parameters, false);
    } catch (const std::bad_alloc&) {
        return Error { path + ": out of memory while reading the optimizer state" };
    }
}

namespace {

std::string shortNumber(double value)
{
    return numberText(value, value >= 0.01 && value < 1000 ? 3 : 2);
}

std::string percent(double share)
{
    std::ostringstream text;
    text.precision(share >= 0.995 || share < 0.1 ? 3 : 2);
    text << share * 100 << "%";
    return text.str();
}

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::vector<std::string> optimizerFlags(
    const OptimizerParameterState& parameter, const OptimizerGroup& group, const OptimizerThresholds& thresholds)
{
    std::vector<std::string> flags;
    // A NaN in either moment reaches the update, and the update the weights, at the next step.
    if (parameter.nonfiniteExpAvgSq > 0)
        flags.push_back(std::to_string(parameter.nonfiniteExpAvgSq)
            + " NaN/Inf in exp_avg_sq: the next step will write NaN into the weights");
    if (parameter.nonfiniteExpAvg > 0)
        flags.push_back(std::to_string(parameter.nonfiniteExpAvg)
            + " NaN/Inf in exp_avg: the next step will write NaN into the weights");
    const bool epsilonDominates
        = parameter.epsilonDominatedShare && epsilonDominated(*parameter.epsilonDominatedShare, thresholds.epsilonDominatedShare);
    if (epsilonDominates)
        flags.push_back("epsilon dominates " + percent(*parameter.epsilonDominatedShare)
            + ": the effective step is lr/eps * g; eps too large, or gradients vanishing");
    if (const auto ratio = updateToLearningRate(parameter, group)) {
        if (*ratio > thresholds.updateToLrAbove)
            flags.push_back("update " + shortNumber(*ratio)
                + " x lr: the latest gradients outgrew the history in exp_avg_sq (a gradient spike)");
        else if (*ratio < thresholds.updateToLrBelow && !epsilonDominates) // said above, with its reason
            flags.push_back("update " + shortNumber(*ratio) + " x lr: the parameter has all but stopped moving");
    }
    return flags;
}

std::vector<ModelParameter> modelParametersOf(const std::vector<NamedTensor>& tensors)
{
    static const std::string lightningPrefix = "state_dict.";
    const bool lightning = std::any_of(tensors.begin(), tensors.end(),
        [](const NamedTensor& t) { return t.name.rfind(lightningPrefix, 0) == 0; });
    std::vector<ModelParameter> parameters;
    std::set<std::tuple<const void*, int64_t, std::vector<int64_t>>> seen; // tied tensors share all three
    for (const NamedTensor& tensor : tensors) {
        std::string name = tensor.name;
        if (lightning) {
            if (name.rfind(lightningPrefix, 0) != 0)
                continue; // optimizer_states, callbacks: not the model
            name.erase(0, lightningPrefix.size());
        }
        if (!isFloatingPoint(tensor.tensor.dtype) || batchnorm::isRunningStatisticName(name))
            continue;
        if (!seen.insert({ tensor.tensor.storage.get(), tensor.tensor.storageOffset, tensor.tensor.shape }).second)
            continue;
        parameters.push_back({ std::move(name), tensor.tensor.shape });
    }
    return parameters;
}

ModelParametersFound findModelParameters(const std::string& modelFileOrFolder)
{
    namespace fs = std::filesystem;
    ModelParametersFound found;
    std::error_code error;
    const fs::path folder(modelFileOrFolder);
    std::vector<std::string> files;
    if (fs::is_directory(folder, error)) {
        auto listed = findTrainedParameterFiles(modelFileOrFolder);
        if (!listed) {
            found.notes.push_back(listed.error());
            return found;
        }
        files = listed->files;
    } else {
        files.push_back(modelFileOrFolder);
    }

    for (const std::string& file : files)
        found.source += (found.source.empty() ? "" : ", ") + file;
    for (const std::string& file : files)
        if (endsWith(file, ".safetensors")) {
            found.notes.push_back(file
                + " keeps its tensors sorted by name, not in the model's order, so it cannot name the "
                  "optimizer's parameters; a pickled state_dict of the model (pytorch_model.bin) can");
            return found;
        }
    std::vector<NamedTensor> tensors;
    for (const std::string& file : files) {
        auto model = readModelTensors(file);
        if (!model) {
            found.notes.push_back("the model's parameter names could not be read: " + model.error());
            return found;
        }
        for (NamedTensor& tensor : model->tensors)
            tensors.push_back(std::move(tensor));
        // Only the names and shapes are kept; the weights themselves are freed with `tensors`.
        for (ModelParameter& parameter : modelParametersOf(tensors))
            found.parameters.push_back(std::move(parameter));
        tensors.clear();
    }
    return found;
}

} // namespace nanscope
