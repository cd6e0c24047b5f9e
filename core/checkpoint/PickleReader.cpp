#include "core/checkpoint/PickleReader.h"

#include "core/checkpoint/PickleMachine.h"

#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace nanscope {

namespace pickle {

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
            default:
                if (!stackOp(op) && !valueOp(op) && !objectOp(op))
                    unsupported(op);
            }
        }
    } catch (const Failure& failure) {
        return Error{failure.message};
    }
}

// The opcodes that move values between the stack, the marks and the memo, and build containers.
bool Machine::stackOp(uint8_t op)
{
    switch (op) {
    case 'q': memoPut(u8()); return true;   // BINPUT
    case 'r': memoPut(u32()); return true;  // LONG_BINPUT
    case 0x94: memoPut(m_memo.size()); return true; // MEMOIZE
    case 'h': push(memoGet(u8())); return true;  // BINGET
    case 'j': push(memoGet(u32())); return true; // LONG_BINGET
    case '(': m_marks.push_back(m_stack.size()); return true; // MARK
    case ')': push(tuple({})); return true;                      // EMPTY_TUPLE
    case 't': push(tuple(popToMark())); return true;             // TUPLE
    case 0x85: { Node* a = pop(); push(tuple({a})); return true; } // TUPLE1
    case 0x86: { Node* b = pop(); Node* a = pop(); push(tuple({a, b})); return true; } // TUPLE2
    case 0x87: { Node* c = pop(); Node* b = pop(); Node* a = pop(); push(tuple({a, b, c})); return true; } // TUPLE3
    case ']': push(make(Node::Kind::List)); return true; // EMPTY_LIST
    case 'l': { Node* list = make(Node::Kind::List); list->items = popToMark(); push(list); return true; } // LIST
    case 'a': { // APPEND
        Node* value = pop();
        Node* list = top();
        if (list->kind != Node::Kind::List)
            failAt("APPEND to a " + std::string(kindName(list->kind)));
        list->items.push_back(value);
        return true;
    }
    case 'e': { // APPENDS
        std::vector<Node*> values = popToMark();
        Node* list = top();
        if (list->kind != Node::Kind::List)
            failAt("APPENDS to a " + std::string(kindName(list->kind)));
        list->items.insert(list->items.end(), values.begin(), values.end());
        return true;
    }
    case '}': push(make(Node::Kind::Dict)); return true; // EMPTY_DICT
    case 'd': { Node* dict = make(Node::Kind::Dict); setItems(dict, popToMark()); push(dict); return true; } // DICT
    case 's': { // SETITEM
        Node* value = pop();
        Node* key = pop();
        setItems(top(), {key, value});
        return true;
    }
    case 'u': { // SETITEMS
        std::vector<Node*> items = popToMark();
        setItems(top(), items);
        return true;
    }
    case '0': pop(); return true;                        // POP
    case '1': popToMark(); return true;                  // POP_MARK
    case '2': push(top()); return true;                  // DUP
    default:
        return false;
    }
}

// The opcodes that push a scalar: None, booleans, integers, floats, strings and bytes.
bool Machine::valueOp(uint8_t op)
{
    switch (op) {
    case 'N': push(make(Node::Kind::None)); return true;
    case 0x88: { Node* b = make(Node::Kind::Bool); b->boolean = true; push(b); return true; }  // NEWTRUE
    case 0x89: push(make(Node::Kind::Bool)); return true;                                        // NEWFALSE
    case 'J': { Node* i = make(Node::Kind::Int); i->integer = int32_t(u32()); push(i); return true; } // BININT
    case 'K': { Node* i = make(Node::Kind::Int); i->integer = u8(); push(i); return true; }           // BININT1
    case 'M': { Node* i = make(Node::Kind::Int); i->integer = u16(); push(i); return true; }          // BININT2
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
        return true;
    }
    case 'G': { // BINFLOAT, big-endian
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k)
            bits = (bits << 8) | p[k];
        Node* d = make(Node::Kind::Double);
        std::memcpy(&d->real, &bits, 8);
        push(d);
        return true;
    }
    case 'X': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); return true; } // BINUNICODE
    case 0x8c: { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); return true; } // SHORT_BINUNICODE
    case 'T': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); return true; } // BINSTRING
    case 'U': { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n))); return true; }  // SHORT_BINSTRING
    case 'B': { const uint32_t n = u32(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n), Node::Kind::Bytes)); return true; } // BINBYTES
    case 'C': { const uint32_t n = u8(); push(string(std::string(reinterpret_cast<const char*>(take(n)), n), Node::Kind::Bytes)); return true; } // SHORT_BINBYTES
    default:
        return false;
    }
}

// The opcodes that name a global or call one (checked by `global` and `call`), and torch's persistent loads.
bool Machine::objectOp(uint8_t op)
{
    switch (op) {
    case 'c': { // GLOBAL
        std::string module = line();
        std::string name = line();
        global(module, name);
        return true;
    }
    case 0x93: { // STACK_GLOBAL
        Node* name = pop();
        Node* module = pop();
        if (name->kind != Node::Kind::String || module->kind != Node::Kind::String)
            failAt("STACK_GLOBAL without strings");
        global(module->text, name->text);
        return true;
    }
    case 'R': { // REDUCE
        Node* args = pop();
        Node* callable = pop();
        push(call(callable, args));
        return true;
    }
    case 0x81: { // NEWOBJ
        Node* args = pop();
        Node* cls = pop();
        push(newObject(cls, args));
        return true;
    }
    case 'b': { // BUILD
        Node* state = pop();
        build(top(), state);
        return true;
    }
    case 'Q': push(persistentLoad(pop())); return true; // BINPERSID
    default:
        return false;
    }
}

[[noreturn]] void Machine::unsupported(uint8_t op)
{
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    failAt(std::string("unsupported pickle opcode ") + hex
           + (op >= 0x20 && op < 0x7f ? std::string(" ('") + char(op) + "')" : std::string())
           + ": not one torch.save writes for tensors and containers");
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

} // namespace pickle

Result<PickledValue> readPickle(const uint8_t* data, size_t size, const StorageLoader& loadStorage,
                                const std::string& context)
{
    try {
        pickle::Machine machine(data, size, loadStorage, context);
        return machine.run();
    } catch (const std::bad_alloc&) {
        return Error{context + ": out of memory while unpickling"};
    } catch (const std::length_error&) {
        return Error{context + ": out of memory while unpickling"};
    }
}

} // namespace nanscope
