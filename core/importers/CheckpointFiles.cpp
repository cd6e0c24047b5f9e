#include "core/importers/CheckpointFiles.h"

#include "core/checkpoint/CheckpointReader.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <system_error>

namespace nanscope {

namespace {

namespace fs = std::filesystem;

// A shard index lists tensor names, never weights: a few MB for the largest models.
constexpr qint64 kMaxIndexBytes = 64 << 20;

bool isRegularFile(const fs::path& path)
{
    std::error_code error;
    return fs::is_regular_file(path, error);
}

// The shard files a Hugging Face index (`*.index.json`: {"weight_map": {tensor: shard file}})
// names, in shard order.
Result<std::vector<std::string>> shardsOfIndex(const fs::path& indexPath)
{
    const std::string where = indexPath.string();
    QFile file(QString::fromStdString(where));
    if (!file.open(QIODevice::ReadOnly))
        return Error { where + ": cannot open: " + file.errorString().toStdString() };
    if (file.size() > kMaxIndexBytes)
        return Error { where + ": " + std::to_string(file.size()) + " bytes is too large for a shard index" };
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(file.readAll(), &parseError);
    if (document.isNull())
        return Error { where + ": not JSON: " + parseError.errorString().toStdString() + " at byte "
            + std::to_string(parseError.offset) };
    const QJsonValue weightMap = document.object().value(QStringLiteral("weight_map"));
    if (!weightMap.isObject())
        return Error { where + ": no \"weight_map\" object: not a Hugging Face shard index" };
    std::set<std::string> shards;
    for (const QJsonValue& shard : weightMap.toObject()) {
        const std::string name = shard.toString().toStdString();
        // A shard lies next to its index; a path could point anywhere on the disk.
        if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "."
            || name == "..")
            return Error { where + ": weight_map names '" + name + "', which is not a file in the checkpoint folder" };
        shards.insert(name);
    }
    if (shards.empty())
        return Error { where + ": the weight_map is empty" };
    std::vector<std::string> paths;
    for (const std::string& shard : shards) { // "model-00001-of-00003..." sorts in shard order
        const fs::path shardPath = indexPath.parent_path() / shard;
        if (!isRegularFile(shardPath))
            return Error { where + ": shard " + shard + " is missing" };
        paths.push_back(shardPath.string());
    }
    return paths;
}

// Shards found by name alone ("model-00001-of-00003.safetensors"), sorted.
std::vector<std::string> shardsByName(const fs::path& folder, const std::regex& pattern)
{
    std::vector<std::string> shards;
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
        if (std::regex_match(it->path().filename().string(), pattern) && isRegularFile(it->path()))
            shards.push_back(it->path().string());
    std::sort(shards.begin(), shards.end());
    return shards;
}

// How a Trainer saves one model's weights: a single file, or shards listed by an index (or, when
// the index is lost, found by name). In precedence order: safetensors first, since Trainer writes
// it by default and it holds the same weights as the pickled form beside it.
struct WeightsForm
{
    const char* single;
    const char* index;        // nullptr: never sharded
    const char* shardPattern; // likewise
    bool inModelOrder;        // a pickled state_dict keeps the registration order; safetensors sorts by name
};

const WeightsForm kModelForms[] = {
    { "model.safetensors", "model.safetensors.index.json", R"(model-\d+-of-\d+\.safetensors)", false },
    { "pytorch_model.bin", "pytorch_model.bin.index.json", R"(pytorch_model-\d+-of-\d+\.bin)", true },
};
// A PEFT adapter, saved beside or instead of the full model.
const WeightsForm kAdapterForms[] = {
    { "adapter_model.safetensors", nullptr, nullptr, false },
    { "adapter_model.bin", nullptr, nullptr, true },
};

const std::regex& shardRegex(const WeightsForm& form)
{
    static const std::regex safetensorsShards(kModelForms[0].shardPattern);
    static const std::regex pickledShards(kModelForms[1].shardPattern);
    return &form == &kModelForms[0] ? safetensorsShards : pickledShards;
}

// Whether the folder holds this form, by names alone.
bool presentForm(const fs::path& folder, const WeightsForm& form)
{
    if (isRegularFile(folder / form.single))
        return true;
    if (!form.index)
        return false;
    return isRegularFile(folder / form.index) || !shardsByName(folder, shardRegex(form)).empty();
}

// The files of one form: its single file, the shards its index lists, or the shards found by name;
// none when the folder does not hold it. Fails on an index that names a missing shard.
Result<CheckpointFiles> filesOfForm(const fs::path& folder, const WeightsForm& form)
{
    if (isRegularFile(folder / form.single))
        return CheckpointFiles { { (folder / form.single).string() }, {} };
    if (!form.index)
        return CheckpointFiles {};
    if (isRegularFile(folder / form.index)) {
        auto shards = shardsOfIndex(folder / form.index);
        if (!shards)
            return Error { shards.error() };
        return CheckpointFiles { std::move(*shards), {} };
    }
    std::vector<std::string> shards = shardsByName(folder, shardRegex(form));
    if (shards.empty())
        return CheckpointFiles {};
    const std::string note
        = "no " + std::string(form.index) + "; read the " + std::to_string(shards.size()) + " shards found by name";
    return CheckpointFiles { std::move(shards), { note } };
}

} // namespace

Result<CheckpointFiles> findCheckpointFiles(const std::string& checkpointPath)
{
    std::error_code error;
    const fs::path folder(checkpointPath);
    if (!fs::is_directory(folder, error)) {
        if (!fs::exists(folder, error))
            return Error { checkpointPath + ": no such file or folder" };
        return CheckpointFiles { { checkpointPath }, {} };
    }

    CheckpointFiles found;
    for (const WeightsForm& form : kModelForms) {
        auto files = filesOfForm(folder, form);
        if (!files)
            return Error { files.error() };
        if (files->files.empty())
            continue;
        found = std::move(*files);
        if (&form == &kModelForms[0] && presentForm(folder, kModelForms[1]))
            found.notes.push_back("pytorch_model.bin skipped; the safetensors files hold the same weights");
        break;
    }
    for (const WeightsForm& adapter : kAdapterForms)
        if (isRegularFile(folder / adapter.single)) {
            found.files.push_back((folder / adapter.single).string());
            break;
        }
    if (found.files.empty())
        return Error { checkpointPath
            + ": a folder without model.safetensors, pytorch_model.bin, their shards or "
              "adapter_model.*: no model weights to read" };
    return found;
}

bool isTrainerWeightsFileName(const std::string& fileName)
{
    for (const auto* forms : { &kModelForms, &kAdapterForms })
        for (const WeightsForm& form : *forms)
            if (fileName == form.single)
                return true;
    return false;
}

std::string trainerWeightsFile(const std::string& folderPath)
{
    const fs::path folder(folderPath);
    for (const auto* forms : { &kModelForms, &kAdapterForms })
        for (const WeightsForm& form : *forms)
            if (isRegularFile(folder / form.single))
                return (folder / form.single).string();
    return {};
}

bool holdsTrainerWeights(const std::string& folderPath)
{
    const fs::path folder(folderPath);
    for (const auto* forms : { &kModelForms, &kAdapterForms })
        for (const WeightsForm& form : *forms)
            if (presentForm(folder, form))
                return true;
    return false;
}

Result<CheckpointFiles> findTrainedParameterFiles(const std::string& folderPath)
{
    const fs::path folder(folderPath);
    for (const auto* forms : { &kAdapterForms, &kModelForms }) {
        const WeightsForm* chosen = nullptr;
        for (const WeightsForm& form : *forms)
            if (presentForm(folder, form) && (!chosen || (form.inModelOrder && !chosen->inModelOrder)))
                chosen = &form;
        if (chosen)
            return filesOfForm(folder, *chosen);
    }
    return findCheckpointFiles(folderPath); // names the folder and what it lacks
}

Result<ModelTensors> readModelTensors(const std::string& path)
{
    auto checkpoint = readCheckpoint(path);
    if (!checkpoint)
        return Error { checkpoint.error() };
    ModelTensors model;
    model.inModelOrder = checkpoint->format != CheckpointFormat::Safetensors;
    // A Lightning checkpoint is a dict whose "state_dict" holds the model; collectTensors names its
    // tensors "state_dict.<key>". Its other tensors (optimizer_states, callbacks) are not weights.
    static const std::string prefix = "state_dict.";
    const bool lightning = checkpoint->format == CheckpointFormat::StateDict
        && std::any_of(checkpoint->tensors.begin(), checkpoint->tensors.end(),
            [](const NamedTensor& t) { return t.name.rfind(prefix, 0) == 0; });
    for (NamedTensor& tensor : checkpoint->tensors) {
        if (lightning) {
            if (tensor.name.rfind(prefix, 0) != 0) {
                ++model.droppedOutsideStateDict;
                continue;
            }
            tensor.name.erase(0, prefix.size());
        }
        model.tensors.push_back(std::move(tensor));
    }
    return model;
}

} // namespace nanscope
