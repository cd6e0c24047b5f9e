#include "core/checkpoint/CheckpointReader.h"

#include "core/checkpoint/PickleReader.h"
#include "core/checkpoint/ExportedProgram.h"
#include "core/checkpoint/StrictJson.h"
#include "core/checkpoint/ZipArchive.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace nanscope {

const char* checkpointFormatName(CheckpointFormat format)
{
    switch (format) {
    case CheckpointFormat::StateDict: return "state_dict";
    case CheckpointFormat::TorchScript: return "torchscript";
    case CheckpointFormat::Safetensors: return "safetensors";
    case CheckpointFormat::Tensor: return "tensor";
    case CheckpointFormat::ExportedProgram: return "exported_program";
    }
    return "?";
}

const PickledValue* PickledValue::find(const std::string& key) const
{
    if (kind != Kind::Dict && kind != Kind::Object)
        return nullptr;
    for (const auto& [k, v] : entries)
        if (k.kind == Kind::String && k.text == key)
            return &v;
    return nullptr;
}

namespace {

constexpr int kMaxTreeDepth = 256;

void collect(const PickledValue& value, const std::string& name, std::vector<NamedTensor>& out, int depth)
{
    if (depth > kMaxTreeDepth)
        return;
    auto child = [&](const std::string& key) { return name.empty() ? key : name + "." + key; };
    switch (value.kind) {
    case PickledValue::Kind::Tensor:
        out.push_back({name, *value.tensor});
        break;
    case PickledValue::Kind::List:
        for (size_t i = 0; i < value.items.size(); ++i)
            collect(value.items[i], child(std::to_string(i)), out, depth + 1);
        break;
    case PickledValue::Kind::Dict:
    case PickledValue::Kind::Object:
        for (const auto& [key, item] : value.entries) {
            std::string keyText;
            if (key.kind == PickledValue::Kind::String)
                keyText = key.text;
            else if (key.kind == PickledValue::Kind::Int)
                keyText = std::to_string(key.integer);
            else
                continue; // tensors under tensor or tuple keys have no readable name
            collect(item, child(keyText), out, depth + 1);
        }
        break;
    default:
        break;
    }
}

// The one "<prefix>/data.pkl" of a torch.save or torch.jit.save archive.
Result<std::string> archivePrefix(const ZipArchive& zip)
{
    std::string prefix;
    for (const auto& entry : zip.entries()) {
        const auto slash = entry.name.find('/');
        if (slash != std::string::npos && entry.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
            if (!prefix.empty())
                return Error{zip.path() + ": two data.pkl records; not a torch.save archive"};
            prefix = entry.name.substr(0, slash);
        }
    }
    if (prefix.empty())
        return Error{zip.path() + ": a zip archive without data.pkl: not written by torch.save or torch.jit.save"};
    return prefix;
}

struct ZipPickle
{
    PickledValue root;
    bool torchScript = false;
    std::vector<NamedTensor> constants;
};

Result<ZipPickle> readZipPickle(const std::string& path)
{
    auto zip = ZipArchive::open(path);
    if (!zip)
        return Error{zip.error()};
    auto prefix = archivePrefix(*zip);
    if (!prefix)
        return Error{prefix.error()};
    if (const auto* order = zip->find(*prefix + "/byteorder")) {
        auto bytes = zip->read(*order);
        if (bytes && std::string(bytes->begin(), bytes->end()) != "little")
            return Error{path + ": tensors saved big-endian are not supported"};
    }

    ZipPickle result;
    for (const auto& entry : zip->entries())
        if (entry.name == *prefix + "/constants.pkl" || entry.name.rfind(*prefix + "/code/", 0) == 0)
            result.torchScript = true;

    auto readRecord = [&](const std::string& record, const std::string& storageFolder) -> Result<PickledValue> {
        auto bytes = zip->read(*prefix + "/" + record);
        if (!bytes)
            return Error{bytes.error()};
        std::map<std::string, StorageBytes> storages;
        StorageLoader loader = [&](const StorageRequest& request) -> Result<StorageBytes> {
            if (request.key.empty() || request.key.find('/') != std::string::npos || request.key.find("..") != std::string::npos)
                return Error{path + ": malformed storage key '" + request.key + "'"};
            auto data = zip->read(*prefix + "/" + storageFolder + "/" + request.key);
            if (!data)
                return Error{data.error()};
            return std::make_shared<const std::vector<uint8_t>>(std::move(*data));
        };
        return readPickle(bytes->data(), bytes->size(), loader, path + " (" + record + ")");
    };

    auto root = readRecord("data.pkl", "data");
    if (!root)
        return Error{root.error()};
    result.root = std::move(*root);
    if (result.torchScript && zip->find(*prefix + "/constants.pkl")) {
        // Tensors the model's code uses as literals; never the code itself.
        auto constants = readRecord("constants.pkl", "constants");
        if (!constants)
            return Error{constants.error()};
        result.constants = collectTensors(*constants, "constants");
        for (auto& c : result.constants)
            if (c.name.rfind("constants", 0) != 0)
                c.name = "constants." + c.name;
    }
    return result;
}

// --- safetensors -------------------------------------------------------------------------------
// The header is JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...},
// decoded by core/checkpoint/StrictJson.

using HeaderJson = strictjson::JsonValue;

bool safetensorsDtype(const std::string& name, DType& dtype)
{
    static const std::map<std::string, DType> names{
        {"F32", DType::Float32}, {"F64", DType::Float64}, {"F16", DType::Float16}, {"BF16", DType::BFloat16},
        {"I64", DType::Int64},   {"I32", DType::Int32},   {"I16", DType::Int16},   {"I8", DType::Int8},
        {"U8", DType::UInt8},    {"BOOL", DType::Bool},
    };
    const auto it = names.find(name);
    if (it == names.end())
        return false;
    dtype = it->second;
    return true;
}

constexpr uint64_t kMaxSafetensorsHeader = 100u << 20; // the format's own limit

Result<Checkpoint> readSafetensors(const std::string& path, uint64_t fileSize)
{
    auto fail = [&](const std::string& what) { return Error{path + ": " + what}; };
    std::ifstream file(path, std::ios::binary);
    uint8_t lengthBytes[8];
    if (!file.read(reinterpret_cast<char*>(lengthBytes), 8))
        return fail("truncated safetensors file");
    uint64_t headerLength = 0;
    for (int k = 7; k >= 0; --k)
        headerLength = (headerLength << 8) | lengthBytes[k];
    if (headerLength > kMaxSafetensorsHeader || headerLength > fileSize - 8)
        return fail("safetensors header of " + std::to_string(headerLength) + " bytes does not fit the "
                    + std::to_string(fileSize) + "-byte file");
    std::string header(headerLength, '\0');
    if (!file.read(header.data(), std::streamsize(headerLength)))
        return fail("truncated safetensors header");
    HeaderJson json;
    std::string jsonError;
    if (!strictjson::parse(header, json, jsonError))
        return fail("bad safetensors header: " + jsonError);
    if (json.kind != HeaderJson::Kind::Object)
        return fail("bad safetensors header: not a JSON object");
    const uint64_t dataSize = fileSize - 8 - headerLength;
    const uint64_t dataStart = 8 + headerLength;

    Checkpoint checkpoint;
    checkpoint.path = path;
    checkpoint.format = CheckpointFormat::Safetensors;
    for (const auto& [name, info] : json.members) {
        if (name == "__metadata__")
            continue;
        const HeaderJson* dtypeField = nullptr;
        const HeaderJson* shapeField = nullptr;
        const HeaderJson* offsetsField = nullptr;
        for (const auto& [key, field] : info.members) {
            if (key == "dtype")
                dtypeField = &field;
            else if (key == "shape")
                shapeField = &field;
            else if (key == "data_offsets")
                offsetsField = &field;
        }
        if (!dtypeField || !shapeField || !offsetsField || dtypeField->kind != HeaderJson::Kind::String
            || shapeField->kind != HeaderJson::Kind::Array || offsetsField->kind != HeaderJson::Kind::Array
            || offsetsField->items.size() != 2)
            return fail("tensor '" + name + "': header entry lacks dtype, shape or data_offsets");
        TensorView view;
        if (!safetensorsDtype(dtypeField->text, view.dtype))
            return fail("tensor '" + name + "': unsupported dtype " + dtypeField->text);
        int64_t numel = 1;
        for (const HeaderJson& extent : shapeField->items) {
            if (extent.kind != HeaderJson::Kind::Number || !extent.numberIsInteger || extent.integer < 0
                || __builtin_mul_overflow(numel, extent.integer, &numel))
                return fail("tensor '" + name + "': bad shape");
            view.shape.push_back(extent.integer);
        }
        if (view.shape.size() > 64)
            return fail("tensor '" + name + "': too many dimensions");
        const HeaderJson& begin = offsetsField->items[0];
        const HeaderJson& end = offsetsField->items[1];
        if (begin.kind != HeaderJson::Kind::Number || end.kind != HeaderJson::Kind::Number || !begin.numberIsInteger
            || !end.numberIsInteger || begin.integer < 0 || end.integer < begin.integer || uint64_t(end.integer) > dataSize)
            return fail("tensor '" + name + "': data_offsets lie outside the file's " + std::to_string(dataSize)
                        + " data bytes");
        int64_t bytes = 0;
        if (__builtin_mul_overflow(numel, int64_t(dtypeSize(view.dtype)), &bytes) || bytes != end.integer - begin.integer)
            return fail("tensor '" + name + "': shape and dtype need a different byte count than data_offsets give");
        auto data = std::make_shared<std::vector<uint8_t>>(size_t(bytes));
        file.seekg(std::streamoff(dataStart + uint64_t(begin.integer)));
        if (bytes > 0 && !file.read(reinterpret_cast<char*>(data->data()), bytes))
            return fail("tensor '" + name + "': read error");
        view.storage = std::move(data);
        int64_t stride = 1;
        view.strides.assign(view.shape.size(), 1);
        for (size_t d = view.shape.size(); d-- > 0;) {
            view.strides[d] = stride;
            stride *= std::max<int64_t>(view.shape[d], 1);
        }
        view.location = "cpu";
        checkpoint.tensors.push_back({name, std::move(view)});
    }
    return checkpoint;
}

} // namespace

std::vector<NamedTensor> collectTensors(const PickledValue& root, const std::string& rootName)
{
    std::vector<NamedTensor> out;
    if (root.kind == PickledValue::Kind::Tensor)
        out.push_back({rootName, *root.tensor});
    else
        collect(root, std::string(), out, 0);
    return out;
}

Result<PickledValue> readPickledFile(const std::string& path)
{
    try {
        // ZipArchive::open refuses anything but a regular file.
        auto pickle = readZipPickle(path);
        if (!pickle)
            return Error{pickle.error()};
        return std::move(pickle->root);
    } catch (const std::bad_alloc&) {
        return Error{path + ": out of memory while reading"};
    }
}

// A torch.export archive's weights and constants (non-persistent buffers, lifted constants), each
// checked against its metadata, in the graph signature's order: the parameters as named_parameters()
// gives them, then the buffers as named_buffers() does.
static Result<Checkpoint> readExportedWeights(const std::string& path)
{
    auto program = readExportedProgram(path);
    if (!program)
        return Error{program.error()};
    auto zip = ZipArchive::open(path);
    if (!zip)
        return Error{zip.error()};
    Checkpoint checkpoint;
    checkpoint.path = path;
    checkpoint.format = CheckpointFormat::ExportedProgram;
    std::vector<const ExportStoredTensor*> ordered;
    std::set<std::string> taken;
    for (const ExportInputSpec& spec : program->inputSpecs)
        for (const auto* stored : {&program->weights, &program->constants})
            if (auto found = stored->find(spec.target); found != stored->end() && taken.insert(spec.target).second)
                ordered.push_back(&found->second);
    for (const auto* stored : {&program->weights, &program->constants})
        for (const auto& [name, tensor] : *stored)
            if (taken.insert(name).second)
                ordered.push_back(&tensor);
    for (const ExportStoredTensor* stored : ordered) {
        auto bytes = readStoredTensorBytes(*zip, *program, *stored);
        if (!bytes)
            return Error{bytes.error()};
        NamedTensor named;
        named.name = stored->name;
        named.tensor.dtype = stored->dtype;
        named.tensor.shape = stored->sizes;
        named.tensor.strides = stored->strides;
        named.tensor.storageOffset = stored->storageOffset;
        named.tensor.storage = std::make_shared<const std::vector<uint8_t>>(std::move(*bytes));
        named.tensor.location = "cpu";
        checkpoint.tensors.push_back(std::move(named));
    }
    return checkpoint;
}

Result<Checkpoint> readCheckpoint(const std::string& path)
{
    if (Status regular = requireRegularFile(path); !regular)
        return Error{regular.error()};
    try {
        std::ifstream file(path, std::ios::binary | std::ios::ate);
        if (!file)
            return Error{path + ": cannot open: " + std::strerror(errno)};
        const uint64_t fileSize = uint64_t(file.tellg());
        file.seekg(0);
        uint8_t head[9] = {};
        file.read(reinterpret_cast<char*>(head), std::min<uint64_t>(fileSize, 9));
        file.close();

        if (fileSize >= 4 && head[0] == 'P' && head[1] == 'K' && isExportArchive(path))
            return readExportedWeights(path);
        if (fileSize >= 4 && head[0] == 'P' && head[1] == 'K') {
            auto pickle = readZipPickle(path);
            if (!pickle)
                return Error{pickle.error()};
            Checkpoint checkpoint;
            checkpoint.path = path;
            if (pickle->torchScript)
                checkpoint.format = CheckpointFormat::TorchScript;
            else if (pickle->root.kind == PickledValue::Kind::Tensor)
                checkpoint.format = CheckpointFormat::Tensor;
            checkpoint.tensors = collectTensors(pickle->root);
            for (auto& constant : pickle->constants)
                checkpoint.tensors.push_back(std::move(constant));
            return checkpoint;
        }
        if (fileSize >= 2 && head[0] == 0x80 && head[1] <= 5)
            return Error{path + ": a legacy torch.save file (written with _use_new_zipfile_serialization=False or by "
                                "PyTorch before 1.6); re-save it with a current torch.save"};
        if (fileSize >= 9 && head[8] == '{')
            return readSafetensors(path, fileSize);
        if (fileSize == 0)
            return Error{path + ": empty file"};
        return Error{path + ": not a checkpoint: neither a torch.save / torch.jit.save zip archive nor a safetensors file"};
    } catch (const std::bad_alloc&) {
        return Error{path + ": out of memory while reading"};
    }
}

} // namespace nanscope
