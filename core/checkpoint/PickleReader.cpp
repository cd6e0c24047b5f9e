#include "core/checkpoint/PickleReader.h"

#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace nanscope {

namespace {

// Containers may nest this deep: far beyond any checkpoint, far below a stack overflow.
constexpr int kMaxDepth = 200;
constexpr size_t kMaxDimensions = 64;
// A view larger than its storage (stride 0) is accepted up to this size.
constexpr int64_t kMaxRepeatingViewBytes = int64_t(64) << 20;

// What one pickle may make nanscope allocate and walk, in proportion to its own bytes. Without
// shared references each pickle byte makes at most one value; memo references (BINGET) share a
// sub-tree, and the tree handed out copies it at every reference. Lists that each hold the
// previous level twice ("billion laughs") so turn 500 bytes into 2^23 values. Legitimate sharing
// (tied weights, repeated keys) stays far inside these factors.
constexpr int64_t kBaseValues = 1'000'000;
constexpr int64_t kValuesPerPickleByte = 16;
constexpr int64_t kBaseTextBytes = int64_t(64) << 20;
constexpr int64_t kTextBytesPerPickleByte = 16;
// Tensor views are walked element by element for statistics. Views of one storage may overlap
// (tied weights, expand()), but all of them together stay within a small multiple of the bytes
// the file actually stores: 300 stride-0 views of 16 bytes are not 19 GB of tensors.
constexpr int64_t kBaseViewBytes = int64_t(256) << 20;
constexpr int64_t kViewBytesPerStoredByte = 4;

struct Node
{
    enum class Kind { None, Bool, Int, Double, String, Bytes, List, Tuple, Dict, Object, Global, Storage, Tensor, Mark };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0.0;
    std::string text; // String/Bytes: the value; Global: "module.name"; Object: class name
    std::vector<Node*> items;
    std::vector<std::pair<Node*, Node*>> entries;
    // Storage
    StorageBytes storage;
    DType dtype = DType::Float32;
    int64_t storageNumel = 0;
    std::string location;
    // Tensor
    std::shared_ptr<const TensorView> tensor;
};

const char* kindName(Node::Kind kind)
{
    switch (kind) {
    case Node::Kind::None: return "None";
    case Node::Kind::Bool: return "bool";
    case Node::Kind::Int: return "int";
    case Node::Kind::Double: return "float";
    case Node::Kind::String: return "str";
    case Node::Kind::Bytes: return "bytes";
    case Node::Kind::List: return "list";
    case Node::Kind::Tuple: return "tuple";
    case Node::Kind::Dict: return "dict";
    case Node::Kind::Object: return "object";
    case Node::Kind::Global: return "global";
    case Node::Kind::Storage: return "storage";
    case Node::Kind::Tensor: return "tensor";
    case Node::Kind::Mark: return "mark";
    }
    return "?";
}

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

bool multiplyChecked(int64_t a, int64_t b, int64_t& result)
{
    return !__builtin_mul_overflow(a, b, &result);
}
bool addChecked(int64_t a, int64_t b, int64_t& result)
{
    return !__builtin_add_overflow(a, b, &result);
}

class Machine
{
public:
    Machine(const uint8_t* data, size_t size, const StorageLoader& loader, const std::string& context)
        : m_data(data)
        , m_size(size)
        , m_loader(loader)
        , m_context(context)
    {
    }

    Result<PickledValue> run();

private:
    struct Failure
    {
        std::string message;
    };

    [[noreturn]] void fail(const std::string& what) const
    {
        throw Failure{m_context + ": " + what};
    }
    [[noreturn]] void failAt(const std::string& what) const
    {
        fail(what + " (pickle offset " + std::to_string(m_opcodeOffset) + ")");
    }

    Node* make(Node::Kind kind)
    {
        m_arena.push_back(std::make_unique<Node>());
        m_arena.back()->kind = kind;
        return m_arena.back().get();
    }

    const uint8_t* take(size_t n)
    {
        if (n > m_size - m_pos)
            failAt("truncated pickle: needs " + std::to_string(n) + " more bytes, " + std::to_string(m_size - m_pos)
                   + " left");
        const uint8_t* p = m_data + m_pos;
        m_pos += n;
        return p;
    }
    uint8_t u8() { return *take(1); }
    uint32_t u16()
    {
        const uint8_t* p = take(2);
        return uint32_t(p[0] | (p[1] << 8));
    }
    uint32_t u32()
    {
        const uint8_t* p = take(4);
        return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
    }
    uint64_t u64()
    {
        const uint64_t low = u32();
        return low | (uint64_t(u32()) << 32);
    }
    std::string line()
    {
        std::string s;
        while (true) {
            const char c = char(u8());
            if (c == '\n')
                return s;
            if (s.size() > 1024)
                failAt("GLOBAL name longer than 1024 bytes");
            s += c;
        }
    }

    void push(Node* node) { m_stack.push_back(node); }
    Node* pop()
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            failAt("stack underflow");
        Node* n = m_stack.back();
        m_stack.pop_back();
        return n;
    }
    Node* top()
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            failAt("stack underflow");
        return m_stack.back();
    }
    std::vector<Node*> popToMark()
    {
        if (m_marks.empty())
            failAt("no MARK on the stack");
        const size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<Node*> items(m_stack.begin() + long(mark), m_stack.end());
        m_stack.resize(mark);
        return items;
    }
    void memoPut(uint64_t index)
    {
        if (m_stack.empty())
            failAt("memo put on an empty stack");
        m_memo[index] = m_stack.back();
    }
    Node* memoGet(uint64_t index)
    {
        const auto it = m_memo.find(index);
        if (it == m_memo.end())
            failAt("memo entry " + std::to_string(index) + " was never stored");
        return it->second;
    }
    Node* tuple(std::vector<Node*> items)
    {
        Node* t = make(Node::Kind::Tuple);
        t->items = std::move(items);
        return t;
    }
    Node* string(std::string value, Node::Kind kind = Node::Kind::String)
    {
        Node* s = make(kind);
        s->text = std::move(value);
        return s;
    }

    void global(const std::string& module, const std::string& name);
    Node* call(Node* callable, Node* args);
    Node* newObject(Node* cls, Node* args);
    void build(Node* target, Node* state);
    Node* persistentLoad(Node* pid);
    Node* rebuildTensor(const std::vector<Node*>& args);
    void setItems(Node* dict, const std::vector<Node*>& items);

    PickledValue convert(const Node* node, int depth);

    const uint8_t* m_data;
    size_t m_size;
    size_t m_pos = 0;
    size_t m_opcodeOffset = 0;
    const StorageLoader& m_loader;
    std::string m_context;
    std::vector<std::unique_ptr<Node>> m_arena;
    std::vector<Node*> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, Node*> m_memo;
    std::map<std::string, Node*> m_storages;
    int64_t m_storedBytes = 0;
    int64_t m_convertedValues = 0;
    int64_t m_convertedTextBytes = 0;
    int64_t m_convertedViewBytes = 0;
};

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

Result<PickledValue> Machine::run()
{
    try {
        while (true) {
            m_opcodeOffset = m_pos;
            const uint8_t op = u8();
            switch (op) {
            case 0x80: // PROTO
                if (u8() > 5)
                    failAt("unknown pickle protocol");
                break;
            case 0x95: // FRAME (protocol 4): a length prefix, no semantics
                u64();
                break;
            case '.': { // STOP
                if (m_stack.size() != 1 || !m_marks.empty())
                    failAt("STOP with " + std::to_string(m_stack.size()) + " values on the stack");
                PickledValue value = convert(m_stack.back(), 0);
                return value;
            }
            case 'c': { // GLOBAL
                std::string module = line();
                std::string name = line();
                global(module, name);
                break;
            }
            case 0x93: { // STACK_GLOBAL
                Node* name = pop();
                Node* module = pop();
                if (name->kind != Node::Kind::String || module->kind != Node::Kind::String)
                    failAt("STACK_GLOBAL without strings");
                global(module->text, name->text);
                break;
            }
            case 'q': memoPut(u8()); break;   // BINPUT
            case 'r': memoPut(u32()); break;  // LONG_BINPUT
            case 0x94: memoPut(m_memo.size()); break; // MEMOIZE
            case 'h': push(memoGet(u8())); break;  // BINGET
            case 'j': push(memoGet(u32())); break; // LONG_BINGET
            case '(': m_marks.push_back(m_stack.size()); break; // MARK
            case ')': push(tuple({})); break;                      // EMPTY_TUPLE
            case 't': push(tuple(popToMark())); break;             // TUPLE
            case 0x85: { Node* a = pop(); push(tuple({a})); break; } // TUPLE1
            case 0x86: { Node* b = pop(); Node* a = pop(); push(tuple({a, b})); break; } // TUPLE2
            case 0x87: { Node* c = pop(); Node* b = pop(); Node* a = pop(); push(tuple({a, b, c})); break; } // TUPLE3
            case ']': push(make(Node::Kind::List)); break; // EMPTY_LIST
            case 'l': { Node* list = make(Node::Kind::List); list->items = popToMark(); push(list); break; } // LIST
            case 'a': { // APPEND
                Node* value = pop();
                Node* list = top();
                if (list->kind != Node::Kind::List)
                    failAt("APPEND to a " + std::string(kindName(list->kind)));
                list->items.push_back(value);
                break;
            }
            case 'e': { // APPENDS
                std::vector<Node*> values = popToMark();
                Node* list = top();
                if (list->kind != Node::Kind::List)
                    failAt("APPENDS to a " + std::string(kindName(list->kind)));
                list->items.insert(list->items.end(), values.begin(), values.end());
                break;
            }
            case '}': push(make(Node::Kind::Dict)); break; // EMPTY_DICT
            case 'd': { Node* dict = make(Node::Kind::Dict); setItems(dict, popToMark()); push(dict); break; } // DICT
            case 's': { // SETITEM
                Node* value = pop();
                Node* key = pop();
                setItems(top(), {key, value});
                break;
            }
            case 'u': { // SETITEMS
                std::vector<Node*> items = popToMark();
                setItems(top(), items);
                break;
            }
            case 'N': push(make(Node::Kind::None)); break;
            case 0x88: { Node* b = make(Node::Kind::Bool); b->boolean = true; push(b); break; }  // NEWTRUE
            case 0x89: push(make(Node::Kind::Bool)); break;                                        // NEWFALSE
            case 'J': { Node* i = make(Node::Kind::Int); i->integer = int32_t(u32()); push(i); break; } // BININT
            case 'K': { Node* i = make(Node::Kind::Int); i->integer = u8(); push(i); break; }           // BININT1
            case 'M': { Node* i = make(Node::Kind::Int); i->integer = u16(); push(i); break; }          // BININT2
            case 0x8a:   // LONG1
            case 0x8b: { // LONG4
                const uint64_t n = op == 0x8a ? u8() : u32();
                if (n > 8)
                    failAt("integer wider than 64 bits");
                const uint8_t* p = take(n);
                uint64_t value = 0;
                for (uint64_t k = 0; k < n; ++k)
                    value |= uint64_t(p[k]) << (8 * k);
                if (n > 0 && n < 8 && (p[n - 1] & 0x80))
                    value |= ~uint64_t(0) << (8 * n); // sign-extend
                Node* i = make(Node::Kind::Int);
                i->integer = int64_t(value);
                push(i);
                break;
            }
            case 'G': { // BINFLOAT, big-endian
                const uint8_t* p = take(8);
                uint64_t bits = 0;
                for (int k = 0; k < 8; ++k)
                    bits = (bits << 8) | p[k];
                Node* d = make(Node::Kind::Double);
                std::memcpy(&d->real, &bits, 8);
                push(d);
                break;
            }
            case 'X': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); break; } // BINUNICODE
            case 0x8c: { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); break; } // SHORT_BINUNICODE
            case 'T': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); break; } // BINSTRING
            case 'U': { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); break; }  // SHORT_BINSTRING
            case 'B': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n), Node::Kind::Bytes)); break; } // BINBYTES
            case 'C': { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n), Node::Kind::Bytes)); break; } // SHORT_BINBYTES
            case 'R': { // REDUCE
                Node* args = pop();
                Node* callable = pop();
                push(call(callable, args));
                break;
            }
            case 0x81: { // NEWOBJ
                Node* args = pop();
                Node* cls = pop();
                push(newObject(cls, args));
                break;
            }
            case 'b': { // BUILD
                Node* state = pop();
                build(top(), state);
                break;
            }
            case 'Q': push(persistentLoad(pop())); break; // BINPERSID
            case '0': pop(); break;                        // POP
            case '1': popToMark(); break;                  // POP_MARK
            case '2': push(top()); break;                  // DUP
            default: {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", op);
                failAt(std::string("unsupported pickle opcode ") + hex
                       + (op >= 0x20 && op < 0x7f ? std::string(" ('") + char(op) + "')" : std::string())
                       + ": not one torch.save writes for tensors and containers");
            }
            }
        }
    } catch (const Failure& failure) {
        return Error{failure.message};
    }
}

PickledValue Machine::convert(const Node* node, int depth)
{
    if (depth > kMaxDepth)
        fail("containers nested deeper than " + std::to_string(kMaxDepth) + " levels (or a container holds itself)");
    // Checked before each value is made, so a multiplying tree is refused before it is allocated.
    const int64_t pickleBytes = int64_t(m_size);
    const int64_t maxValues = kBaseValues + kValuesPerPickleByte * pickleBytes;
    if (++m_convertedValues > maxValues)
        fail("the pickled tree expands to more than " + std::to_string(maxValues) + " values from a "
             + std::to_string(pickleBytes) + "-byte pickle (shared references multiplying: refused)");
    if (node->kind == Node::Kind::String || node->kind == Node::Kind::Bytes) {
        const int64_t maxTextBytes = kBaseTextBytes + kTextBytesPerPickleByte * pickleBytes;
        m_convertedTextBytes += int64_t(node->text.size());
        if (m_convertedTextBytes > maxTextBytes)
            fail("the pickled tree repeats strings to more than " + std::to_string(maxTextBytes) + " bytes from a "
                 + std::to_string(pickleBytes) + "-byte pickle (shared references multiplying: refused)");
    }
    if (node->kind == Node::Kind::Tensor) {
        const int64_t maxViewBytes = kBaseViewBytes + kViewBytesPerStoredByte * (m_storedBytes + pickleBytes);
        const int64_t viewBytes = node->tensor->numel() * int64_t(dtypeSize(node->tensor->dtype));
        if (!addChecked(m_convertedViewBytes, viewBytes, m_convertedViewBytes) || m_convertedViewBytes > maxViewBytes)
            fail("its tensors view more than " + std::to_string(maxViewBytes) + " bytes in all, but the file stores "
                 + std::to_string(m_storedBytes) + " bytes of tensor data (views repeating a storage: refused)");
    }
    PickledValue v;
    switch (node->kind) {
    case Node::Kind::None: break;
    case Node::Kind::Bool: v.kind = PickledValue::Kind::Bool; v.boolean = node->boolean; break;
    case Node::Kind::Int: v.kind = PickledValue::Kind::Int; v.integer = node->integer; break;
    case Node::Kind::Double: v.kind = PickledValue::Kind::Double; v.real = node->real; break;
    case Node::Kind::String:
    case Node::Kind::Bytes: v.kind = PickledValue::Kind::String; v.text = node->text; break;
    case Node::Kind::Tensor: v.kind = PickledValue::Kind::Tensor; v.tensor = node->tensor; break;
    case Node::Kind::List:
    case Node::Kind::Tuple:
        v.kind = PickledValue::Kind::List;
        v.isTuple = node->kind == Node::Kind::Tuple;
        v.items.reserve(node->items.size());
        for (const Node* item : node->items)
            v.items.push_back(convert(item, depth + 1));
        break;
    case Node::Kind::Dict:
    case Node::Kind::Object:
        v.kind = node->kind == Node::Kind::Dict ? PickledValue::Kind::Dict : PickledValue::Kind::Object;
        v.text = node->text;
        v.entries.reserve(node->entries.size());
        for (const auto& [key, value] : node->entries)
            v.entries.emplace_back(convert(key, depth + 1), convert(value, depth + 1));
        break;
    case Node::Kind::Global:
    case Node::Kind::Storage:
    case Node::Kind::Mark:
        fail(std::string("a bare ") + kindName(node->kind) + " in the object tree");
    }
    return v;
}

} // namespace

Result<PickledValue> readPickle(const uint8_t* data, size_t size, const StorageLoader& loadStorage,
                                const std::string& context)
{
    try {
        Machine machine(data, size, loadStorage, context);
        return machine.run();
    } catch (const std::bad_alloc&) {
        return Error{context + ": out of memory while unpickling"};
    } catch (const std::length_error&) {
        return Error{context + ": out of memory while unpickling"};
    }
}

} // namespace nanscope
