#include "core/checkpoint/ExportedProgram.h"

#include "core/checkpoint/ExportGraphDecoder.h"
#include "core/checkpoint/StrictJson.h"
#include "core/checkpoint/ZipArchive.h"

#include <algorithm>
#include <limits>

namespace nanscope {

namespace {

using strictjson::JsonValue;
using strictjson::member;

// The graph JSON of a GPT with two blocks is 0.5 MB and a Llama's of two layers 0.36 MB; 256 MiB
// holds a model of thousands of layers and keeps a hostile file from asking for more.
constexpr uint64_t kMostGraphBytes = 256ull << 20;
constexpr uint64_t kMostConfigBytes = 64ull << 20;
// Each torch.cond nests a graph about twelve levels below its node: 512 levels hold 40 nested
// branches, and a file nested 10,000 deep is refused without recursion (StrictJson).
constexpr int kMostJsonDepth = 512;

using exportjson::GraphDecoder;
using exportjson::kMostTensorRank;

const std::string* argName(const JsonValue& spec)
{
    const JsonValue* arg = member(spec, "arg");
    if (!arg)
        return nullptr;
    // A parameter's arg is {"name": ...}; a user input's is an Argument ({"as_tensor": {"name": ...}}).
    if (const JsonValue* name = member(*arg, "name"); name && name->kind == JsonValue::Kind::String)
        return &name->text;
    if (const JsonValue* tensor = member(*arg, "as_tensor"))
        if (const JsonValue* name = member(*tensor, "name"); name && name->kind == JsonValue::Kind::String)
            return &name->text;
    return nullptr;
}

std::string textMember(const JsonValue& json, const char* key)
{
    const JsonValue* value = member(json, key);
    return value && value->kind == JsonValue::Kind::String ? value->text : std::string();
}

bool readSignature(const JsonValue& signature, ExportedProgram& program, GraphDecoder& decoder, std::string& error)
{
    const JsonValue* inputs = member(signature, "input_specs");
    const JsonValue* outputs = member(signature, "output_specs");
    if (!inputs || inputs->kind != JsonValue::Kind::Array || !outputs || outputs->kind != JsonValue::Kind::Array) {
        error = "the graph signature has no input or output specs";
        return false;
    }
    using IK = ExportInputSpec::Kind;
    for (const JsonValue& item : inputs->items) {
        if (item.kind != JsonValue::Kind::Object || item.members.size() != 1) {
            error = "an input spec is not a one-member object";
            return false;
        }
        const auto& [kind, body] = item.members.front();
        ExportInputSpec spec;
        const std::string* name = argName(body);
        if (name)
            spec.argName = *name;
        if (kind == "parameter") {
            spec.kind = IK::Parameter;
            spec.target = textMember(body, "parameter_name");
        } else if (kind == "buffer") {
            spec.kind = IK::Buffer;
            spec.target = textMember(body, "buffer_name");
            if (const JsonValue* persistent = member(body, "persistent"); persistent && persistent->kind == JsonValue::Kind::Bool)
                spec.persistent = persistent->integer != 0;
        } else if (kind == "tensor_constant") {
            spec.kind = IK::TensorConstant;
            spec.target = textMember(body, "tensor_constant_name");
        } else if (kind == "user_input") {
            spec.kind = IK::UserInput;
        } else if (kind == "constant_input") {
            spec.kind = IK::ConstantInput;
            spec.argName = textMember(body, "name");
            spec.target = spec.argName;
            const JsonValue* value = member(body, "value");
            if (!value || !decoder.argument(*value, spec.constantValue)) {
                error = decoder.error().empty() ? "constant input " + spec.argName + " has no value" : decoder.error();
                return false;
            }
        } else {
            spec.kind = IK::Other;
            spec.otherKind = kind;
        }
        if (spec.argName.empty() && spec.kind != IK::Other) {
            error = "an input spec (" + kind + ") names no graph input";
            return false;
        }
        program.inputSpecs.push_back(std::move(spec));
    }
    using OK = ExportOutputSpec::Kind;
    for (const JsonValue& item : outputs->items) {
        if (item.kind != JsonValue::Kind::Object || item.members.size() != 1) {
            error = "an output spec is not a one-member object";
            return false;
        }
        const auto& [kind, body] = item.members.front();
        ExportOutputSpec spec;
        if (const std::string* name = argName(body))
            spec.argName = *name;
        spec.kind = kind == "user_output" ? OK::UserOutput : kind == "buffer_mutation" ? OK::BufferMutation
                                         : kind == "loss_output"                       ? OK::LossOutput
                                                                                       : OK::Other;
        if (spec.kind == OK::BufferMutation)
            spec.target = textMember(body, "buffer_name");
        program.outputSpecs.push_back(std::move(spec));
    }
    return true;
}

// A weights or constants config: {"config": {name: {path_name, is_param, use_pickle, tensor_meta}}}.
bool readTensorConfig(const JsonValue& json, const std::string& folder, std::map<std::string, ExportStoredTensor>& out,
                      std::string& error)
{
    const JsonValue* config = member(json, "config");
    if (!config || config->kind != JsonValue::Kind::Object) {
        error = "no \"config\" object";
        return false;
    }
    for (const auto& [name, entry] : config->members) {
        ExportStoredTensor tensor;
        tensor.name = name;
        const std::string file = textMember(entry, "path_name");
        if (file.empty() || file.find('/') != std::string::npos || file.find("..") != std::string::npos) {
            error = name + ": its path_name \"" + file.substr(0, 60) + "\" is not a file of the folder";
            return false;
        }
        tensor.entry = folder + file;
        if (const JsonValue* pickled = member(entry, "use_pickle"); pickled && pickled->kind == JsonValue::Kind::Bool &&
                                                                   pickled->integer != 0) {
            error = name + " is stored pickled (use_pickle), which nanscope does not unpickle here";
            return false;
        }
        if (const JsonValue* param = member(entry, "is_param"); param && param->kind == JsonValue::Kind::Bool)
            tensor.isParameter = param->integer != 0;
        const JsonValue* meta = member(entry, "tensor_meta");
        if (!meta) {
            error = name + " has no tensor_meta";
            return false;
        }
        const JsonValue* dtype = member(*meta, "dtype");
        const JsonValue* sizes = member(*meta, "sizes");
        const JsonValue* strides = member(*meta, "strides");
        if (!dtype || dtype->kind != JsonValue::Kind::Number || !sizes || sizes->kind != JsonValue::Kind::Array ||
            !strides || strides->kind != JsonValue::Kind::Array || sizes->items.size() != strides->items.size() ||
            sizes->items.size() > size_t(kMostTensorRank)) {
            error = name + ": its tensor_meta has no dtype, or sizes and strides that do not match";
            return false;
        }
        const auto type = dtypeOfExportScalarType(int(dtype->integer));
        if (!type) {
            error = name + ": dtype " + std::to_string(dtype->integer) + " (the schema's ScalarType) is not one nanscope reads";
            return false;
        }
        tensor.dtype = *type;
        auto readInts = [&](const JsonValue& list, std::vector<int64_t>& values) {
            for (const JsonValue& item : list.items) {
                const JsonValue* constant = member(item, "as_int");
                if (!constant || constant->kind != JsonValue::Kind::Number || !constant->numberIsInteger ||
                    constant->integer < 0)
                    return false;
                values.push_back(constant->integer);
            }
            return true;
        };
        if (!readInts(*sizes, tensor.sizes) || !readInts(*strides, tensor.strides)) {
            error = name + ": its sizes and strides are not non-negative constants";
            return false;
        }
        if (const JsonValue* offset = member(*meta, "storage_offset")) {
            std::vector<int64_t> values;
            JsonValue list;
            list.kind = JsonValue::Kind::Array;
            list.items.push_back(*offset);
            if (!readInts(list, values)) {
                error = name + ": its storage_offset is not a non-negative constant";
                return false;
            }
            tensor.storageOffset = values.front();
        }
        if (const JsonValue* grad = member(*meta, "requires_grad"); grad && grad->kind == JsonValue::Kind::Bool)
            tensor.requiresGrad = grad->integer != 0;
        out[name] = std::move(tensor);
    }
    return true;
}

Result<std::string> readText(const ZipArchive& zip, const std::string& entry, uint64_t most)
{
    const ZipArchive::Entry* found = zip.find(entry);
    if (!found)
        return Error{zip.path() + ": the archive has no " + entry};
    if (found->size > most)
        return Error{zip.path() + ": " + entry + " is " + std::to_string(found->size) + " bytes, more than the " +
                     std::to_string(most >> 20) + " MiB nanscope reads of it"};
    auto bytes = zip.read(*found);
    if (!bytes)
        return Error{bytes.error()};
    return std::string(bytes->begin(), bytes->end());
}

// The archive's root folder: the one that holds `archive_format` (torch names it after the file,
// or "package").
std::string rootOf(const ZipArchive& zip)
{
    for (const auto& entry : zip.entries()) {
        const auto slash = entry.name.find('/');
        if (slash != std::string::npos && entry.name.compare(slash + 1, std::string::npos, "archive_format") == 0)
            return entry.name.substr(0, slash);
    }
    return {};
}

} // namespace

std::optional<DType> dtypeOfExportScalarType(int scalarType)
{
    switch (scalarType) {
    case 1: return DType::UInt8;
    case 2: return DType::Int8;
    case 3: return DType::Int16;
    case 4: return DType::Int32;
    case 5: return DType::Int64;
    case 6: return DType::Float16;
    case 7: return DType::Float32;
    case 8: return DType::Float64;
    case 12: return DType::Bool;
    case 13: return DType::BFloat16;
    default: return std::nullopt;
    }
}

bool isExportArchive(const std::string& path)
{
    if (!requireRegularFile(path))
        return false;
    auto zip = ZipArchive::open(path);
    if (!zip)
        return false;
    const std::string root = rootOf(*zip);
    if (root.empty())
        return false;
    auto format = readText(*zip, root + "/archive_format", 64);
    return format && format->rfind("pt2", 0) == 0;
}

Result<ExportedProgram> readExportedProgram(const std::string& path)
{
    auto zip = ZipArchive::open(path);
    if (!zip)
        return Error{zip.error()};
    ExportedProgram program;
    program.path = path;
    program.root = rootOf(*zip);
    if (program.root.empty())
        return Error{path + ": not a torch.export archive (no archive_format under a root folder)"};
    auto format = readText(*zip, program.root + "/archive_format", 64);
    if (!format)
        return Error{format.error()};
    if (format->rfind("pt2", 0) != 0)
        return Error{path + ": archive_format says \"" + format->substr(0, 20) + "\", not pt2"};

    // The program: models/model.json, or the one model the archive holds under another name.
    std::string modelEntry = program.root + "/models/model.json";
    if (!zip->find(modelEntry)) {
        std::vector<std::string> models;
        for (const auto& entry : zip->entries())
            if (entry.name.rfind(program.root + "/models/", 0) == 0 && entry.name.size() > 5 &&
                entry.name.compare(entry.name.size() - 5, 5, ".json") == 0)
                models.push_back(entry.name);
        if (models.size() != 1)
            return Error{path + ": " + (models.empty() ? std::string("the archive holds no models/*.json program (an "
                                                                     "AOTInductor package holds compiled code only)")
                                                       : std::to_string(models.size()) + " programs in models/; nanscope replays an "
                                                                                          "archive of one")};
        modelEntry = models.front();
    }
    const std::string modelName = modelEntry.substr(modelEntry.rfind('/') + 1, modelEntry.size() - modelEntry.rfind('/') - 6);
    auto text = readText(*zip, modelEntry, kMostGraphBytes);
    if (!text)
        return Error{text.error()};
    const std::string where = path + ": " + modelEntry.substr(program.root.size() + 1);
    JsonValue json;
    if (std::string error; !strictjson::parse(*text, json, error, kMostJsonDepth))
        return Error{where + ": " + error};
    text->clear();
    text->shrink_to_fit();
    const JsonValue* version = member(json, "schema_version");
    const JsonValue* major = version ? member(*version, "major") : nullptr;
    const JsonValue* minor = version ? member(*version, "minor") : nullptr;
    if (!major || major->kind != JsonValue::Kind::Number || !minor || minor->kind != JsonValue::Kind::Number)
        return Error{where + ": no schema_version: not an ExportedProgram"};
    program.schemaMajor = int(major->integer);
    program.schemaMinor = int(minor->integer);
    program.torchVersion = textMember(json, "torch_version");
    const std::string writtenBy = program.torchVersion.empty() ? "" : " (written by torch " + program.torchVersion + ")";
    if (program.schemaMajor != kExportSchemaMajor)
        return Error{where + ": export schema version " + std::to_string(program.schemaMajor) + "." +
                     std::to_string(program.schemaMinor) + writtenBy + "; this nanscope reads version " +
                     std::to_string(kExportSchemaMajor) + ".x (torch 2.15 writes " + std::to_string(kExportSchemaMajor) +
                     "." + std::to_string(kExportSchemaMinor) + ")"};
    const JsonValue* module = member(json, "graph_module");
    const JsonValue* graph = module ? member(*module, "graph") : nullptr;
    const JsonValue* signature = module ? member(*module, "signature") : nullptr;
    if (!graph || !signature)
        return Error{where + ": no graph_module with a graph and a signature"};
    GraphDecoder decoder(where);
    if (!decoder.graph(*graph, program.graph))
        return Error{decoder.error()};
    if (std::string error; !readSignature(*signature, program, decoder, error))
        return Error{where + ": " + error};

    // Where the tensors lie. A program with no weights has no weights config.
    const std::string weightsConfig = program.root + "/data/weights/" + modelName + "_weights_config.json";
    const std::string constantsConfig = program.root + "/data/constants/" + modelName + "_constants_config.json";
    for (const auto& [entry, folder, tensors] :
         {std::tuple{weightsConfig, program.root + "/data/weights/", &program.weights},
          std::tuple{constantsConfig, program.root + "/data/constants/", &program.constants}}) {
        if (!zip->find(entry))
            continue;
        auto config = readText(*zip, entry, kMostConfigBytes);
        if (!config)
            return Error{config.error()};
        JsonValue configJson;
        std::string error;
        if (!strictjson::parse(*config, configJson, error) || !readTensorConfig(configJson, folder, *tensors, error))
            return Error{path + ": " + entry.substr(program.root.size() + 1) + ": " + error};
    }
    return program;
}

Result<std::vector<uint8_t>> readStoredTensorBytes(const ZipArchive& zip, const ExportedProgram& program,
                                                   const ExportStoredTensor& tensor)
{
    const ZipArchive::Entry* entry = zip.find(tensor.entry);
    const std::string where = program.path + ": " + tensor.name;
    if (!entry)
        return Error{where + ": the archive has no " + tensor.entry.substr(program.root.size() + 1)};
    // The furthest element the view reaches, with every product checked: a hostile size must not
    // overflow into a small number.
    const uint64_t item = dtypeSize(tensor.dtype);
    uint64_t extent = 1; // elements reached: offset + 1 + sum (size - 1) * stride, or 0 for an empty tensor
    bool empty = false;
    uint64_t reach = uint64_t(tensor.storageOffset);
    for (size_t d = 0; d < tensor.sizes.size(); ++d) {
        const uint64_t size = uint64_t(tensor.sizes[d]);
        const uint64_t stride = uint64_t(tensor.strides[d]);
        if (size == 0)
            empty = true;
        else if (stride != 0 && size - 1 > (std::numeric_limits<uint64_t>::max() / 2) / stride)
            return Error{where + ": its sizes and strides reach past any file"};
        else
            reach += (size - 1) * stride;
        if (reach > (std::numeric_limits<uint64_t>::max() / 2) / item)
            return Error{where + ": its sizes and strides reach past any file"};
    }
    extent = empty ? 0 : reach + 1;
    const uint64_t needed = extent * item;
    if (needed > entry->size)
        return Error{where + ": its metadata (" + dtypeName(tensor.dtype) + " " + shapeText(tensor.sizes) + ") needs " +
                     std::to_string(needed) + " bytes of storage, but " + tensor.entry.substr(program.root.size() + 1) +
                     " holds " + std::to_string(entry->size)};
    if (entry->size > zip.fileSize())
        return Error{where + ": its entry says " + std::to_string(entry->size) + " bytes, more than the file's " +
                     std::to_string(zip.fileSize())};
    return zip.read(*entry);
}

} // namespace nanscope
