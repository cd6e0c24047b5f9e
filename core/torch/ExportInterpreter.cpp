#include "core/torch/ExportInterpreter.h"

#include "core/torch/ExportNodeValues.h"

#include "core/replay/ReplayOptions.h"
#include "core/run/RunFormat.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>
#include <ATen/ScalarOps.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace nanscope::replaytorch {

using exportnode::asDouble;
using exportnode::asInt;
using exportnode::fail;
using exportnode::namesRead;
using exportnode::namesWritten;

namespace {

constexpr const char* kOpsPrefix = "torch.ops.";
// The namespaces whose ops are LibTorch's own (run_format.json, which the recorder checks too). An
// op of any other (a user's torch.library op, a kernel library's) would need that library's code:
// refused by name.
const std::set<std::string> kLibTorchNamespaces(std::begin(runformat::exportreplay::kOpNamespaces),
                                                std::end(runformat::exportreplay::kOpNamespaces));

// The integer and boolean arithmetic export records on sizes and shapes, by target.
enum class SymbolicOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Neg, Pow, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not, Max, Min,
                        Ceil, Floor, ToFloat, ToInt };
const std::map<std::string, SymbolicOp>& symbolicOps()
{
    static const std::map<std::string, SymbolicOp> ops = {
        {"_operator.add", SymbolicOp::Add},         {"_operator.sub", SymbolicOp::Sub},
        {"_operator.mul", SymbolicOp::Mul},         {"_operator.floordiv", SymbolicOp::FloorDiv},
        {"_operator.truediv", SymbolicOp::TrueDiv}, {"_operator.mod", SymbolicOp::Mod},
        {"_operator.neg", SymbolicOp::Neg},         {"_operator.pow", SymbolicOp::Pow},
        {"_operator.eq", SymbolicOp::Eq},           {"_operator.ne", SymbolicOp::Ne},
        {"_operator.lt", SymbolicOp::Lt},           {"_operator.le", SymbolicOp::Le},
        {"_operator.gt", SymbolicOp::Gt},           {"_operator.ge", SymbolicOp::Ge},
        {"_operator.and_", SymbolicOp::And},        {"_operator.or_", SymbolicOp::Or},
        {"torch.sym_not", SymbolicOp::Not},         {"torch.sym_max", SymbolicOp::Max},
        {"torch.sym_min", SymbolicOp::Min},         {"math.ceil", SymbolicOp::Ceil},
        {"math.floor", SymbolicOp::Floor},          {"torch.sym_float", SymbolicOp::ToFloat},
        {"torch.sym_int", SymbolicOp::ToInt},
    };
    return ops;
}

// The higher-order ops replayed (run_format.json), by target: torch.ops.higher_order.cond and so on.
const std::set<std::string> kHigherOrderOps = [] {
    std::set<std::string> targets;
    for (const char* name : runformat::exportreplay::kHigherOrderOps)
        targets.insert(std::string("torch.ops.higher_order.") + name);
    return targets;
}();


// The schema's ScalarType number (torch/_export/serde/schema.py) as LibTorch's.
c10::ScalarType scalarTypeOf(int64_t serialized)
{
    switch (serialized) {
    case 1: return c10::ScalarType::Byte;
    case 2: return c10::ScalarType::Char;
    case 3: return c10::ScalarType::Short;
    case 4: return c10::ScalarType::Int;
    case 5: return c10::ScalarType::Long;
    case 6: return c10::ScalarType::Half;
    case 7: return c10::ScalarType::Float;
    case 8: return c10::ScalarType::Double;
    case 9: return c10::ScalarType::ComplexHalf;
    case 10: return c10::ScalarType::ComplexFloat;
    case 11: return c10::ScalarType::ComplexDouble;
    case 12: return c10::ScalarType::Bool;
    case 13: return c10::ScalarType::BFloat16;
    case 28: return c10::ScalarType::UInt16;
    case 29: return c10::ScalarType::Float8_e4m3fn;
    case 30: return c10::ScalarType::Float8_e5m2;
    case 31: return c10::ScalarType::Float8_e4m3fnuz;
    case 32: return c10::ScalarType::Float8_e5m2fnuz;
    case 34: return c10::ScalarType::UInt32;
    case 35: return c10::ScalarType::UInt64;
    default: throw std::runtime_error("scalar type " + std::to_string(serialized) + " of the export schema is not one LibTorch has");
    }
}

c10::MemoryFormat memoryFormatOf(int64_t serialized)
{
    switch (serialized) {
    case 1: return c10::MemoryFormat::Contiguous;
    case 2: return c10::MemoryFormat::ChannelsLast;
    case 3: return c10::MemoryFormat::ChannelsLast3d;
    case 4: return c10::MemoryFormat::Preserve;
    default: throw std::runtime_error("memory format " + std::to_string(serialized) + " of the export schema is unknown");
    }
}

c10::Layout layoutOf(int64_t serialized)
{
    switch (serialized) {
    case 1: return c10::kSparse;
    case 2: return c10::kSparseCsr;
    case 3: return c10::kSparseCsc;
    case 4: return c10::kSparseBsr;
    case 5: return c10::kSparseBsc;
    case 6: return c10::kMkldnn;
    case 7: return c10::kStrided;
    default: throw std::runtime_error("layout " + std::to_string(serialized) + " of the export schema is unknown");
    }
}

// The innermost frame of a stack trace as Python prints it ('File "x.py", line 6, in forward' and
// the code on the next line): where the op was called, as the eager replay names it: the innermost
// frame outside torch's own package (nn.Linear's forward is not the user's line; the line that
// called the layer is) and outside code generated at run time ("<eval_with_key>.54", a torch.cond
// branch's graph module); else the innermost of all.
void innermostFrame(const std::string& trace, std::string& source, std::string& code)
{
    std::istringstream lines(trace);
    std::string line;
    std::string libraryFrameSource, libraryFrameCode;
    bool codeNext = false, libraryFrame = false;
    while (std::getline(lines, line)) {
        const auto file = line.find("File \"");
        if (file != std::string::npos) {
            const auto close = line.find('"', file + 6);
            const auto at = line.find(", line ", close == std::string::npos ? file : close);
            if (close == std::string::npos || at == std::string::npos)
                continue;
            const std::string name = line.substr(file + 6, close - file - 6);
            size_t end = at + 7;
            while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
                ++end;
            libraryFrame = name.empty() || name.front() == '<' || name.find("-packages/torch/") != std::string::npos;
            (libraryFrame ? libraryFrameSource : source) = name + ":" + line.substr(at + 7, end - at - 7);
            (libraryFrame ? libraryFrameCode : code).clear();
            codeNext = true;
        } else if (codeNext) {
            const auto first = line.find_first_not_of(" \t\r");
            const auto last = line.find_last_not_of(" \t\r");
            (libraryFrame ? libraryFrameCode : code) = first == std::string::npos ? "" : line.substr(first, last - first + 1);
            codeNext = false;
        }
    }
    if (source.empty()) {
        source = libraryFrameSource;
        code = libraryFrameCode;
    }
    constexpr size_t kMaxLength = 160;
    if (code.size() > kMaxLength) {
        size_t cut = kMaxLength - 3;
        while (cut > 0 && (static_cast<unsigned char>(code[cut]) & 0xc0) == 0x80)
            --cut;
        code = code.substr(0, cut) + "...";
    }
}

// "aten::linear", "" of "torch.ops.aten.linear.default"; the overload "default" is LibTorch's "".
bool splitTarget(const std::string& target, std::string& ns, std::string& name, std::string& overload)
{
    if (target.rfind(kOpsPrefix, 0) != 0)
        return false;
    const std::string rest = target.substr(std::char_traits<char>::length(kOpsPrefix));
    const auto firstDot = rest.find('.');
    const auto lastDot = rest.rfind('.');
    if (firstDot == std::string::npos || lastDot == firstDot)
        return false;
    ns = rest.substr(0, firstDot);
    name = rest.substr(firstDot + 1, lastDot - firstDot - 1);
    overload = rest.substr(lastDot + 1);
    if (overload == "default")
        overload.clear();
    return true;
}

void collectTensorsOf(const c10::IValue& value, std::vector<torch::Tensor>& out)
{
    if (value.isTensor())
        out.push_back(value.toTensor());
    else if (value.isTensorList())
        for (const at::Tensor& t : value.toTensorList())
            out.push_back(t);
    else if (value.isList())
        for (const c10::IValue& item : value.toListRef())
            if (item.isTensor())
                out.push_back(item.toTensor());
}

} // namespace

namespace exportnode {

[[noreturn]] void fail(const ExportNode& node, const std::string& why)
{
    throw std::runtime_error("node " + node.name + " (" + node.target + "): " + why);
}

double asDouble(const c10::IValue& v)
{
    if (v.isDouble())
        return v.toDouble();
    if (v.isInt())
        return double(v.toInt());
    if (v.isBool())
        return v.toBool() ? 1 : 0;
    if (v.isTensor())
        return v.toTensor().item<double>();
    throw std::runtime_error("a symbolic value is not a number");
}

int64_t asInt(const c10::IValue& v)
{
    if (v.isInt())
        return v.toInt();
    if (v.isBool())
        return v.toBool() ? 1 : 0;
    if (v.isDouble())
        return int64_t(v.toDouble());
    if (v.isTensor())
        return v.toTensor().item<int64_t>();
    throw std::runtime_error("a symbolic value is not an integer");
}

// Which names an argument reads.
void namesRead(const ExportArgument& arg, std::vector<std::string>& out)
{
    for (const auto& name : arg.names)
        if (!name.empty())
            out.push_back(name);
    for (const auto& s : arg.symInts)
        if (!s.name.empty())
            out.push_back(s.name);
}

void namesWritten(const ExportArgument& arg, std::vector<std::string>& out)
{
    namesRead(arg, out);
}

} // namespace exportnode

struct ExportInterpreter::Resolved
{
    c10::OperatorHandle handle;
    explicit Resolved(c10::OperatorHandle h) : handle(std::move(h)) {}
};

const c10::IValue* ExportValues::find(const std::string& name) const
{
    for (const ExportValues* scope = this; scope; scope = scope->m_parent)
        if (auto it = scope->m_values.find(name); it != scope->m_values.end())
            return &it->second;
    return nullptr;
}

OpSite siteOfExportNode(const ExportNode& node)
{
    OpSite site;
    std::string ns, name, overload;
    site.op = splitTarget(node.target, ns, name, overload) ? ns + "::" + name : node.target;
    // "L__self__,,__main__.M;L__self__bn,bn,torch.nn.modules.batchnorm.BatchNorm1d": the last entry's path.
    if (!node.moduleStack.empty()) {
        const auto entryStart = node.moduleStack.rfind(';');
        const std::string entry = node.moduleStack.substr(entryStart == std::string::npos ? 0 : entryStart + 1);
        const auto first = entry.find(',');
        const auto last = entry.rfind(',');
        if (first != std::string::npos && last != first)
            site.module = entry.substr(first + 1, last - first - 1);
    }
    innermostFrame(node.stackTrace, site.source, site.code);
    if (site.op == "aten::softmax" || site.op == "aten::_softmax")
        site.role = OpSite::Role::Softmax;
    else if (site.op == "aten::log_softmax" || site.op == "aten::_log_softmax")
        site.role = OpSite::Role::LogSoftmax;
    else if (site.op == "aten::cross_entropy_loss")
        site.role = OpSite::Role::CrossEntropy;
    if (site.role == OpSite::Role::Softmax || site.role == OpSite::Role::LogSoftmax)
        for (const auto& input : node.inputs)
            if (input.name == "dim" && input.arg.kind == ExportArgument::Kind::Int && !input.arg.ints.empty())
                site.dim = input.arg.ints.front();
    return site;
}

ExportInterpreter::ExportInterpreter(const ExportedProgram& program, torch::Device device, bool checkMetadata)
    : m_program(program), m_device(device), m_checkMetadata(checkMetadata)
{
}

Status ExportInterpreter::resolveOps()
{
    return resolveIn(m_program.graph);
}

Status ExportInterpreter::resolveIn(const ExportGraph& graph)
{
    const std::string writer = m_program.torchVersion.empty() ? "the torch that wrote it" : "torch " + m_program.torchVersion;
    for (const ExportNode& node : graph.nodes) {
        for (const auto& input : node.inputs) {
            if (input.arg.kind == ExportArgument::Kind::Graph && input.arg.graph)
                if (Status inner = resolveIn(*input.arg.graph); !inner)
                    return inner;
            if (input.arg.kind == ExportArgument::Kind::Unsupported)
                return Error{m_program.path + ": node " + node.name + " (" + node.target + ") takes an argument of kind " +
                             input.arg.unsupported + ", which nanscope does not replay"};
        }
        if (m_ops.count(node.target) || symbolicOps().count(node.target) || kHigherOrderOps.count(node.target))
            continue;
        std::string ns, name, overload;
        if (!splitTarget(node.target, ns, name, overload))
            return Error{m_program.path + ": node " + node.name + " calls " + node.target +
                         ", a Python function: nanscope runs only LibTorch's ops from an archive, never its code"};
        if (ns == "higher_order") {
            std::string replayed;
            for (const char* known : runformat::exportreplay::kHigherOrderOps)
                replayed += (replayed.empty() ? "" : ", ") + std::string(known);
            return Error{m_program.path + ": node " + node.name + " is the higher-order op " + name +
                         ", which nanscope does not replay (it replays " + replayed + ")"};
        }
        if (!kLibTorchNamespaces.count(ns))
            return Error{m_program.path + ": node " + node.name + " calls " + ns + "::" + name +
                         ", an op of the extension library '" + ns + "' that LibTorch does not have; nanscope runs "
                         "only LibTorch's own ops from an archive"};
        auto handle = c10::Dispatcher::singleton().findSchema({ns + "::" + name, overload});
        if (!handle)
            return Error{m_program.path + ": the graph calls " + ns + "::" + name + (overload.empty() ? "" : "." + overload) +
                         ", an op LibTorch " + libtorchVersion() + " (the one nanscope-torch replays with) does not have; "
                         "the archive was written by " + writer};
        m_ops[node.target] = std::make_shared<Resolved>(*handle);
    }
    return Status::success();
}

c10::IValue ExportInterpreter::valueOf(const ExportArgument& arg, const ExportValues& values, const c10::TypePtr& type) const
{
    using K = ExportArgument::Kind;
    auto named = [&](const std::string& name) -> const c10::IValue& {
        const c10::IValue* value = values.find(name);
        if (!value)
            throw std::runtime_error("the value " + name + " is used before any node computes it");
        return *value;
    };
    auto tensorNamed = [&](const std::string& name) {
        const c10::IValue& value = named(name);
        if (!value.isTensor())
            throw std::runtime_error("the value " + name + " is not a tensor");
        return value.toTensor();
    };
    auto symInt = [&](const ExportSymInt& s) { return s.name.empty() ? s.value : asInt(named(s.name)); };
    c10::TypePtr element = type;
    if (type && type->kind() == c10::TypeKind::OptionalType)
        element = type->castRaw<c10::OptionalType>()->getElementType();
    const bool wantsFloat = element && element->kind() == c10::TypeKind::FloatType;
    // A Python number where the schema takes a tensor (x + 1.0 is aten.add.Tensor(x, 1.0)): a
    // wrapped number, as PyTorch's own argument parser makes it, so that it does not promote x's dtype.
    if (element && element->kind() == c10::TypeKind::TensorType &&
        (arg.kind == K::Int || arg.kind == K::Float || arg.kind == K::Bool)) {
        const c10::Scalar scalar = arg.kind == K::Float ? c10::Scalar(arg.floats.front())
                                   : arg.kind == K::Bool ? c10::Scalar(arg.ints.front() != 0)
                                                         : c10::Scalar(arg.ints.front());
        at::Tensor wrapped = c10::scalar_to_tensor(scalar, m_device);
        wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
        return wrapped;
    }
    switch (arg.kind) {
    case K::None: return c10::IValue();
    case K::Tensor:
    case K::OptionalTensor:
        if (arg.names.empty() || arg.names.front().empty())
            return c10::IValue();
        return tensorNamed(arg.names.front());
    case K::Tensors:
    case K::OptionalTensors: {
        const bool optionalElements = element && element->kind() == c10::TypeKind::ListType &&
                                      element->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::OptionalType;
        if (optionalElements || arg.kind == K::OptionalTensors) {
            c10::List<std::optional<at::Tensor>> list;
            for (const auto& name : arg.names)
                list.push_back(name.empty() ? std::optional<at::Tensor>() : std::optional<at::Tensor>(tensorNamed(name)));
            return list;
        }
        c10::List<at::Tensor> list;
        for (const auto& name : arg.names)
            list.push_back(tensorNamed(name));
        return list;
    }
    case K::Int: return wantsFloat ? c10::IValue(double(arg.ints.front())) : c10::IValue(arg.ints.front());
    case K::Ints: return c10::IValue(arg.ints);
    case K::Float: return c10::IValue(arg.floats.front());
    case K::Floats: return c10::IValue(arg.floats);
    case K::Bool: return c10::IValue(arg.ints.front() != 0);
    case K::Bools: {
        c10::List<bool> list;
        for (int64_t b : arg.ints)
            list.push_back(b != 0);
        return list;
    }
    case K::String: return c10::IValue(arg.strings.front());
    case K::Strings: return c10::IValue(arg.strings);
    case K::SymInt: return c10::IValue(symInt(arg.symInts.front()));
    case K::SymInts: {
        std::vector<int64_t> ints;
        for (const auto& s : arg.symInts)
            ints.push_back(symInt(s));
        return c10::IValue(ints);
    }
    case K::SymBool:
        return arg.names.empty() ? c10::IValue(!arg.ints.empty() && arg.ints.front() != 0) : named(arg.names.front());
    case K::SymFloat:
        return arg.names.empty() ? c10::IValue(arg.floats.empty() ? 0.0 : arg.floats.front()) : named(arg.names.front());
    case K::ScalarType: return c10::IValue(scalarTypeOf(arg.ints.front()));
    case K::MemoryFormat: return c10::IValue(memoryFormatOf(arg.ints.front()));
    case K::Layout: return c10::IValue(layoutOf(arg.ints.front()));
    case K::Device: return c10::IValue(m_device);
    case K::Graph:
    case K::Unsupported: break;
    }
    throw std::runtime_error("an argument of this kind cannot be passed to an op");
}

void ExportInterpreter::run(const ExportGraph& graph, ExportValues& values, std::set<std::string>& dataNames,
                            const OpObserver& observe, int iteration) const
{
    for (const ExportNode& node : graph.nodes)
        runNode(node, values, dataNames, observe, iteration);
}

void ExportInterpreter::runNode(const ExportNode& node, ExportValues& values, std::set<std::string>& dataNames,
                                const OpObserver& observe, int iteration) const
{
    // Data flow from the batch: an output is data when any input is.
    std::vector<std::string> read, written;
    for (const auto& input : node.inputs)
        namesRead(input.arg, read);
    for (const auto& output : node.outputs)
        namesWritten(output, written);
    const bool fromData = std::any_of(read.begin(), read.end(), [&](const std::string& n) { return dataNames.count(n) > 0; });

    if (!m_checkMetadata && node.target == "torch.ops.aten._assert_tensor_metadata.default")
        return;
    if (kHigherOrderOps.count(node.target)) {
        runHigherOrder(node, values, dataNames, observe, iteration);
    } else if (auto symbolic = symbolicOps().find(node.target); symbolic != symbolicOps().end()) {
        std::vector<c10::IValue> operands;
        for (const auto& input : node.inputs)
            operands.push_back(valueOf(input.arg, values, nullptr));
        if (operands.empty() || node.outputs.empty())
            fail(node, "takes no operand or gives no output");
        const c10::IValue& a = operands[0];
        const c10::IValue b = operands.size() > 1 ? operands[1] : c10::IValue();
        const bool integers = a.isInt() && (b.isNone() || b.isInt());
        c10::IValue result;
        switch (symbolic->second) {
        case SymbolicOp::Add: result = integers ? c10::IValue(asInt(a) + asInt(b)) : c10::IValue(asDouble(a) + asDouble(b)); break;
        case SymbolicOp::Sub: result = integers ? c10::IValue(asInt(a) - asInt(b)) : c10::IValue(asDouble(a) - asDouble(b)); break;
        case SymbolicOp::Mul: result = integers ? c10::IValue(asInt(a) * asInt(b)) : c10::IValue(asDouble(a) * asDouble(b)); break;
        case SymbolicOp::FloorDiv:
            if (integers) {
                if (asInt(b) == 0)
                    fail(node, "integer division by zero");
                const int64_t q = asInt(a) / asInt(b);
                result = c10::IValue((q * asInt(b) != asInt(a) && ((asInt(a) < 0) != (asInt(b) < 0))) ? q - 1 : q);
            } else
                result = c10::IValue(std::floor(asDouble(a) / asDouble(b)));
            break;
        case SymbolicOp::TrueDiv: result = c10::IValue(asDouble(a) / asDouble(b)); break;
        case SymbolicOp::Mod:
            if (integers) {
                if (asInt(b) == 0)
                    fail(node, "integer modulo by zero");
                int64_t m = asInt(a) % asInt(b);
                if (m != 0 && ((m < 0) != (asInt(b) < 0)))
                    m += asInt(b);
                result = c10::IValue(m);
            } else
                result = c10::IValue(std::fmod(asDouble(a), asDouble(b)));
            break;
        case SymbolicOp::Neg: result = a.isInt() ? c10::IValue(-asInt(a)) : c10::IValue(-asDouble(a)); break;
        case SymbolicOp::Pow: result = c10::IValue(std::pow(asDouble(a), asDouble(b))); break;
        case SymbolicOp::Eq: result = c10::IValue(asDouble(a) == asDouble(b)); break;
        case SymbolicOp::Ne: result = c10::IValue(asDouble(a) != asDouble(b)); break;
        case SymbolicOp::Lt: result = c10::IValue(asDouble(a) < asDouble(b)); break;
        case SymbolicOp::Le: result = c10::IValue(asDouble(a) <= asDouble(b)); break;
        case SymbolicOp::Gt: result = c10::IValue(asDouble(a) > asDouble(b)); break;
        case SymbolicOp::Ge: result = c10::IValue(asDouble(a) >= asDouble(b)); break;
        case SymbolicOp::And: result = c10::IValue(asInt(a) != 0 && asInt(b) != 0); break;
        case SymbolicOp::Or: result = c10::IValue(asInt(a) != 0 || asInt(b) != 0); break;
        case SymbolicOp::Not: result = c10::IValue(asInt(a) == 0); break;
        case SymbolicOp::Max: result = integers ? c10::IValue(std::max(asInt(a), asInt(b))) : c10::IValue(std::max(asDouble(a), asDouble(b))); break;
        case SymbolicOp::Min: result = integers ? c10::IValue(std::min(asInt(a), asInt(b))) : c10::IValue(std::min(asDouble(a), asDouble(b))); break;
        case SymbolicOp::Ceil: result = c10::IValue(int64_t(std::ceil(asDouble(a)))); break;
        case SymbolicOp::Floor: result = c10::IValue(int64_t(std::floor(asDouble(a)))); break;
        case SymbolicOp::ToFloat: result = c10::IValue(asDouble(a)); break;
        case SymbolicOp::ToInt: result = c10::IValue(asInt(a)); break;
        }
        if (!written.empty())
            values.set(written.front(), result);
    } else {
        runOperatorCall(node, values);
        if (observe) {
            std::vector<torch::Tensor> inputs, outputs;
            for (const auto& input : node.inputs)
                for (const auto& name : input.arg.names)
                    if (const c10::IValue* v = name.empty() ? nullptr : values.find(name); v && v->isTensor())
                        inputs.push_back(v->toTensor());
            for (const auto& name : written)
                if (const c10::IValue* v = values.find(name); v && v->isTensor())
                    outputs.push_back(v->toTensor());
            if (!outputs.empty()) {
                OpSite site = siteOfExportNode(node);
                site.fromData = fromData;
                site.iteration = iteration;
                observe(site, inputs, outputs);
            }
        }
    }
    if (fromData)
        dataNames.insert(written.begin(), written.end());
}

void ExportInterpreter::runOperatorCall(const ExportNode& node, ExportValues& values) const
{
    auto it = m_ops.find(node.target);
    if (it == m_ops.end())
        fail(node, "was not resolved");
    const c10::OperatorHandle& op = it->second->handle;
    const c10::FunctionSchema& schema = op.schema();
    torch::jit::Stack stack;
    stack.reserve(schema.arguments().size());
    size_t positional = 0;
    for (const c10::Argument& argument : schema.arguments()) {
        const ExportNamedArgument* given = nullptr;
        for (const auto& input : node.inputs)
            if (input.name == argument.name()) {
                given = &input;
                break;
            }
        // Older archives name no argument: the positional ones come in the schema's order.
        if (!given && positional < node.inputs.size() && node.inputs[positional].name.empty() && !argument.kwarg_only())
            given = &node.inputs[positional];
        ++positional;
        if (given)
            stack.push_back(valueOf(given->arg, values, argument.type()));
        else if (argument.default_value())
            stack.push_back(*argument.default_value());
        else
            fail(node, "gives no value for the argument " + argument.name() + " of " + schema.name());
    }
    op.callBoxed(stack);
    // The returns, one per output the node lists; a node that lists one tensor list for several
    // returned tensors (a tuple) takes them in order.
    const auto& outputs = node.outputs;
    if (outputs.size() == 1 && outputs.front().kind == ExportArgument::Kind::Tensors && stack.size() > 1) {
        for (size_t i = 0; i < outputs.front().names.size() && i < stack.size(); ++i)
            if (!outputs.front().names[i].empty())
                values.set(outputs.front().names[i], stack[i]);
        return;
    }
    for (size_t i = 0; i < outputs.size() && i < stack.size(); ++i) {
        const ExportArgument& out = outputs[i];
        const c10::IValue& returned = stack[i];
        switch (out.kind) {
        case ExportArgument::Kind::Tensor:
        case ExportArgument::Kind::SymInt:
        case ExportArgument::Kind::SymBool:
        case ExportArgument::Kind::SymFloat:
        case ExportArgument::Kind::OptionalTensor:
            if (!out.names.empty() && !out.names.front().empty())
                values.set(out.names.front(), returned);
            else if (!out.symInts.empty() && !out.symInts.front().name.empty())
                values.set(out.symInts.front().name, returned);
            break;
        case ExportArgument::Kind::Tensors:
        case ExportArgument::Kind::OptionalTensors: {
            std::vector<torch::Tensor> tensors;
            collectTensorsOf(returned, tensors);
            for (size_t j = 0; j < out.names.size() && j < tensors.size(); ++j)
                if (!out.names[j].empty())
                    values.set(out.names[j], tensors[j]);
            break;
        }
        default: break;
        }
    }
}

} // namespace nanscope::replaytorch
