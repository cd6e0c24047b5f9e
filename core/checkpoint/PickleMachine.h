#pragma once

// Internal to core/checkpoint: the restricted unpickler's machine, shared by its two halves:
// PickleReader.cpp runs the opcodes and converts the result; PickleTorchCalls.cpp holds the few
// globals a pickle may call (tensor and storage rebuilds, TorchScript objects) and refuses the rest.

#include "core/checkpoint/PickleReader.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace nanscope::pickle {

// Containers may nest this deep: far beyond any checkpoint, far below a stack overflow.
inline constexpr int kMaxDepth = 200;
inline constexpr size_t kMaxDimensions = 64;
// A view larger than its storage (stride 0) is accepted up to this size.
inline constexpr int64_t kMaxRepeatingViewBytes = int64_t(64) << 20;

// What one pickle may make nanscope allocate and walk, in proportion to its own bytes. Without
// shared references each pickle byte makes at most one value; memo references (BINGET) share a
// sub-tree, and the tree handed out copies it at every reference. Lists that each hold the
// previous level twice ("billion laughs") so turn 500 bytes into 2^23 values. Legitimate sharing
// (tied weights, repeated keys) stays far inside these factors.
inline constexpr int64_t kBaseValues = 1'000'000;
inline constexpr int64_t kValuesPerPickleByte = 16;
inline constexpr int64_t kBaseTextBytes = int64_t(64) << 20;
inline constexpr int64_t kTextBytesPerPickleByte = 16;
// Tensor views are walked element by element for statistics. Views of one storage may overlap
// (tied weights, expand()), but all of them together stay within a small multiple of the bytes
// the file actually stores: 300 stride-0 views of 16 bytes are not 19 GB of tensors.
inline constexpr int64_t kBaseViewBytes = int64_t(256) << 20;
inline constexpr int64_t kViewBytesPerStoredByte = 4;

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

inline const char* kindName(Node::Kind kind)
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

// The module.name globals a pickle may name: storage types, and the calls that rebuild tensors
// and containers (PickleTorchCalls.cpp). Anything else is refused.
const std::map<std::string, DType>& storageTypes();
const std::set<std::string>& callableGlobals();

inline bool multiplyChecked(int64_t a, int64_t b, int64_t& result)
{
    return !__builtin_mul_overflow(a, b, &result);
}
inline bool addChecked(int64_t a, int64_t b, int64_t& result)
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
    // Each carries out `op` when it is one of its group; false when it is not.
    bool stackOp(uint8_t op);
    bool valueOp(uint8_t op);
    bool objectOp(uint8_t op);
    [[noreturn]] void unsupported(uint8_t op);
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

} // namespace nanscope::pickle
