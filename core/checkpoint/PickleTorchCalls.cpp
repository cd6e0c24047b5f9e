// The globals a checkpoint's pickle may name and call (the restricted unpickler's allow-list): the
// storage types, the tensor rebuilds, TorchScript objects and the containers they build.
#include "core/checkpoint/PickleMachine.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace nanscope::pickle {

const std::map<std::string, DType>& storageTypes()
{
    static const std::map<std::string, DType> types{
        {"torch.FloatStorage", DType::Float32}, {"torch.DoubleStorage", DType::Float64},
        {"torch.HalfStorage", DType::Float16},  {"torch.BFloat16Storage", DType::BFloat16},
        {"torch.LongStorage", DType::Int64},    {"torch.IntStorage", DType::Int32},
        {"torch.ShortStorage", DType::Int16},   {"torch.CharStorage", DType::Int8},
        {"torch.ByteStorage", DType::UInt8},    {"torch.BoolStorage", DType::Bool},
    };
    return types;
}

// Globals that are "called" (REDUCE) to a fixed C++ construction.
const std::set<std::string>& callableGlobals()
{
    static const std::set<std::string> names{
        "collections.OrderedDict",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state",
        "torch.Size",
        // TorchScript's pickler tags typed containers; each returns its first argument.
        "torch.jit._pickle.restore_type_tag",
        "torch.jit._pickle.build_intlist",
        "torch.jit._pickle.build_tensorlist",
        "torch.jit._pickle.build_doublelist",
        "torch.jit._pickle.build_boollist",
    };
    return names;
}

void Machine::global(const std::string& module, const std::string& name)
{
    const std::string full = module + "." + name;
    const bool scriptClass = module == "__torch__" || module.rfind("__torch__.", 0) == 0;
    if (!scriptClass && !storageTypes().count(full) && !callableGlobals().count(full))
        failAt("refuses global '" + full
               + "': nanscope reads only tensors and plain containers, and never imports or runs anything a "
                 "file names");
    Node* g = make(Node::Kind::Global);
    g->text = full;
    push(g);
}

void Machine::setItems(Node* dict, const std::vector<Node*>& items)
{
    if (dict->kind != Node::Kind::Dict && dict->kind != Node::Kind::Object)
        failAt("SETITEMS on a " + std::string(kindName(dict->kind)));
    if (items.size() % 2)
        failAt("SETITEMS with an odd number of items");
    for (size_t i = 0; i < items.size(); i += 2)
        dict->entries.emplace_back(items[i], items[i + 1]);
}

Node* Machine::persistentLoad(Node* pid)
{
    // ('storage', torch.FloatStorage, key, location, numel)
    if (pid->kind != Node::Kind::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Node::Kind::String
        || pid->items[0]->text != "storage")
        failAt("unsupported persistent id: only ('storage', type, key, location, numel) is read");
    const Node* type = pid->items[1];
    const Node* key = pid->items[2];
    const Node* location = pid->items[3];
    const Node* numel = pid->items[4];
    if (type->kind != Node::Kind::Global || !storageTypes().count(type->text))
        failAt("persistent id names no storage type");
    if (key->kind != Node::Kind::String || location->kind != Node::Kind::String || numel->kind != Node::Kind::Int
        || numel->integer < 0)
        failAt("malformed storage persistent id");
    const DType dtype = storageTypes().at(type->text);
    const std::string cacheKey = key->text;
    if (const auto it = m_storages.find(cacheKey); it != m_storages.end()) {
        if (it->second->dtype != dtype)
            failAt("storage '" + cacheKey + "' is read with two element types");
        return it->second;
    }
    StorageRequest request{key->text, dtype, location->text, numel->integer};
    auto bytes = m_loader(request);
    if (!bytes)
        fail(bytes.error());
    int64_t needed = 0;
    if (!multiplyChecked(numel->integer, int64_t(dtypeSize(dtype)), needed) || uint64_t(needed) > (*bytes)->size())
        failAt("storage '" + cacheKey + "' declares " + std::to_string(numel->integer) + " elements of "
               + dtypeName(dtype) + " but holds " + std::to_string((*bytes)->size()) + " bytes");
    Node* storage = make(Node::Kind::Storage);
    storage->storage = *bytes;
    storage->dtype = dtype;
    storage->storageNumel = numel->integer;
    storage->location = location->text;
    m_storages[cacheKey] = storage;
    m_storedBytes += int64_t((*bytes)->size());
    return storage;
}

Node* Machine::rebuildTensor(const std::vector<Node*>& args)
{
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (args.size() < 4)
        failAt("_rebuild_tensor_v2 with " + std::to_string(args.size()) + " arguments");
    const Node* storage = args[0];
    const Node* offset = args[1];
    const Node* size = args[2];
    const Node* stride = args[3];
    if (storage->kind != Node::Kind::Storage)
        failAt("_rebuild_tensor_v2 without a storage");
    if (offset->kind != Node::Kind::Int || offset->integer < 0)
        failAt("tensor with a bad storage offset");
    if (size->kind != Node::Kind::Tuple || stride->kind != Node::Kind::Tuple || size->items.size() != stride->items.size())
        failAt("tensor with malformed size or stride");
    if (size->items.size() > kMaxDimensions)
        failAt("tensor with " + std::to_string(size->items.size()) + " dimensions");
    auto view = std::make_shared<TensorView>();
    view->dtype = storage->dtype;
    view->storage = storage->storage;
    view->location = storage->location;
    view->storageOffset = offset->integer;
    int64_t numel = 1;
    int64_t lastIndex = offset->integer; // the largest element index the view touches
    for (size_t d = 0; d < size->items.size(); ++d) {
        const Node* extent = size->items[d];
        const Node* step = stride->items[d];
        if (extent->kind != Node::Kind::Int || step->kind != Node::Kind::Int || extent->integer < 0 || step->integer < 0)
            failAt("tensor with a negative or non-integer size or stride");
        view->shape.push_back(extent->integer);
        view->strides.push_back(step->integer);
        if (!multiplyChecked(numel, extent->integer, numel))
            failAt("tensor shape overflows");
    }
    // A view may repeat elements (stride 0, as expand() makes), but a view far larger than its
    // storage is an absurd shape, not a checkpoint: refuse it before anything walks it.
    int64_t viewBytes = 0;
    const int64_t storageBytes = storage->storageNumel * int64_t(dtypeSize(storage->dtype));
    if (!multiplyChecked(numel, int64_t(dtypeSize(storage->dtype)), viewBytes)
        || (viewBytes > storageBytes && viewBytes > kMaxRepeatingViewBytes))
        failAt("tensor of " + std::to_string(numel) + " elements needs " + std::to_string(viewBytes)
               + " bytes but its storage holds " + std::to_string(storageBytes) + " (absurd shape)");
    if (numel > 0) {
        for (size_t d = 0; d < view->shape.size(); ++d) {
            int64_t reach = 0;
            if (!multiplyChecked(view->shape[d] - 1, view->strides[d], reach) || !addChecked(lastIndex, reach, lastIndex))
                failAt("tensor view overflows");
        }
        if (lastIndex >= storage->storageNumel)
            failAt("tensor of shape " + [&] {
                std::string s = "[";
                for (size_t d = 0; d < view->shape.size(); ++d)
                    s += (d ? ", " : "") + std::to_string(view->shape[d]);
                return s + "]";
            }() + " reaches element " + std::to_string(lastIndex) + " of a storage of "
                   + std::to_string(storage->storageNumel) + " elements (storage out of range)");
    }
    Node* tensor = make(Node::Kind::Tensor);
    tensor->tensor = std::move(view);
    return tensor;
}

Node* Machine::call(Node* callable, Node* args)
{
    if (callable->kind != Node::Kind::Global)
        failAt("REDUCE on a " + std::string(kindName(callable->kind)) + ", not a global");
    if (args->kind != Node::Kind::Tuple)
        failAt("REDUCE with non-tuple arguments");
    const std::string& name = callable->text;
    const auto& a = args->items;
    if (name == "collections.OrderedDict") {
        if (!a.empty())
            failAt("OrderedDict built from arguments");
        return make(Node::Kind::Dict);
    }
    if (name == "torch._utils._rebuild_tensor_v2")
        return rebuildTensor(a);
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
        if (a.empty() || a[0]->kind != Node::Kind::Tensor)
            failAt(name + " without a tensor");
        return a[0];
    }
    if (name == "torch.Size") {
        if (a.size() != 1 || a[0]->kind != Node::Kind::Tuple)
            failAt("torch.Size without a tuple");
        return a[0];
    }
    if (name.rfind("torch.jit._pickle.", 0) == 0) {
        if (a.empty())
            failAt(name + " without arguments");
        return a[0];
    }
    failAt("refuses to call '" + name + "'");
}

Node* Machine::newObject(Node* cls, Node* args)
{
    if (cls->kind != Node::Kind::Global || cls->text.rfind("__torch__", 0) != 0)
        failAt("NEWOBJ of '" + cls->text + "': only TorchScript (__torch__) classes are built");
    if (args->kind != Node::Kind::Tuple || !args->items.empty())
        failAt("NEWOBJ of '" + cls->text + "' with arguments");
    Node* object = make(Node::Kind::Object);
    object->text = cls->text;
    return object;
}

void Machine::build(Node* target, Node* state)
{
    switch (target->kind) {
    case Node::Kind::Object:
        // A TorchScript module: its __dict__. A class with __setstate__ keeps its state as one attribute.
        if (state->kind == Node::Kind::Dict) {
            for (const auto& entry : state->entries)
                target->entries.push_back(entry);
        } else {
            target->entries.emplace_back(string("__state__"), state);
        }
        return;
    case Node::Kind::Dict:   // an OrderedDict's _metadata: not needed for tensors
    case Node::Kind::Tensor: // a parameter's python attributes
        return;
    default:
        failAt("BUILD on a " + std::string(kindName(target->kind)));
    }
}

} // namespace nanscope::pickle
