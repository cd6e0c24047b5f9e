#include "core/torch/Replay.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/replay/ReplayJudgement.h"
#include "core/replay/ReplaySignatures.h"
#include "core/run/LayerNames.h"
#include "core/torch/TensorRange.h"
#include "core/checkpoint/ZipArchive.h"

#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/scope.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <regex>
#include <set>
#include <fstream>
#include <map>
#include <sstream>

namespace nanscope {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// The one statistics kernel (core/tensor) over every value the replay captures: a single fused
// pass, accurate when the mean is large (a naive sum of squares here once lost the spread of values
// like 1e4 + small noise). Empty for an undefined tensor (no gradient reached it, say).
std::optional<TensorStats> statsOf(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    return torchutil::tensorStats(tensor);
}

// The module paths PyTorch's named_modules() gives the model ("layer1.0.conv1", "h.0.attn").
std::set<std::string> modulePathsOf(const torch::jit::Module& model)
{
    std::set<std::string> paths;
    for (const auto& m : model.named_modules())
        paths.insert(m.name);
    return paths;
}

// The path, among the model's own (`paths`), of the module `name` called from the module at
// `parent`. A module called from a container's loop (`for block in self.h:`) is named by its index
// alone in the call stack ("0"): its path runs through the container ("h.0"), which is never
// called itself. Found by looking one or two containers deep.
std::string childPath(const std::set<std::string>& paths, const std::string& parent, const std::string& name)
{
    const std::string prefix = parent.empty() ? "" : parent + ".";
    if (paths.count(prefix + name))
        return prefix + name;
    for (int depth = 0; depth < 2; ++depth) {
        std::string found;
        for (auto it = paths.lower_bound(prefix); it != paths.end() && it->compare(0, prefix.size(), prefix) == 0; ++it) {
            const std::string rest = it->substr(prefix.size());
            const size_t dots = size_t(std::count(rest.begin(), rest.end(), '.'));
            if (dots == size_t(depth + 1) && rest.size() > name.size() &&
                rest.compare(rest.size() - name.size() - 1, std::string::npos, "." + name) == 0) {
                if (!found.empty())
                    return prefix + name; // ambiguous: keep what the call stack says
                found = *it;
            }
        }
        if (!found.empty())
            return found;
    }
    return prefix + name;
}

// The module an op ran in, as PyTorch names it. The call stack of an inlined op lists the module
// instances it was called through; methods a module calls on itself ("SELF": self._conv_forward)
// add no level. An op inside an `if` or a loop that carries no call stack of its own belongs to
// the module of the block's owner.
std::string modulePathOf(const Node* node, const std::set<std::string>& paths)
{
    while (!node->callstack() && node->owningBlock() && node->owningBlock()->owningNode())
        node = node->owningBlock()->owningNode();
    auto callstack = node->callstack();
    if (!callstack)
        return "";
    std::string path;
    for (const auto& entry : (*callstack)->vec()) {
        const auto& info = std::get<2>(entry);
        if (!info)
            continue;
        std::string name = info->instance_name();
        if (name.empty() || name == "self" || name == "SELF")
            continue;
        path = childPath(paths, path, name);
    }
    return path;
}

// A traced op's "source" is the Python stack of the trace, innermost frame first, one frame a
// line: "/home/me/model.py(42): forward". The file and line of the innermost frame, when it is one.
std::optional<std::pair<std::string, int>> tracedFrameOf(const Node* node)
{
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated; // the archive's code -> the range it was made from: the trace's frames
    const auto source = range.source();
    if (!source || range.start() >= source->size())
        return std::nullopt;
    const std::string line = source->get_line(source->lineno_for_offset(range.start())).str();
    static const std::regex frame(R"(^\s*(.+)\((\d+)\): \S+\s*$)");
    std::smatch match;
    if (!std::regex_match(line, match, frame))
        return std::nullopt;
    try {
        return std::make_pair(match[1].str(), std::stoi(match[2].str()));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Line `number` (from 1) of `file`, or "" when it cannot be read.
std::string lineOfFile(const std::string& file, int number)
{
    std::ifstream in(file);
    std::string line;
    for (int i = 0; i < number && std::getline(in, line); ++i) {
    }
    return in ? line : std::string();
}

std::string sourceOf(const Node* node)
{
    if (auto traced = tracedFrameOf(node))
        return traced->first + ":" + std::to_string(traced->second);
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated;
    if (auto location = range.file_line_col()) {
        std::string file = std::get<0>(*location);
        return file + ":" + std::to_string(std::get<1>(*location));
    }
    if (range.source())
        return "<torchscript>:" + std::to_string(range.source()->lineno_for_offset(range.start()) + 1);
    return "";
}

// The text of the line an op came from, as the archive carries it (TorchScript keeps the source it
// was compiled from), trimmed and cut to a readable length.
std::string codeOf(const Node* node)
{
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated;
    const auto source = range.source();
    if (!source || range.start() >= source->size())
        return "";
    std::string line = source->get_line(source->lineno_for_offset(range.start())).str();
    // A trace keeps no source text, only where each op was called: the line is read from that
    // file where it still exists (else no code is shown rather than the frame's own text).
    if (auto traced = tracedFrameOf(node))
        line = lineOfFile(traced->first, traced->second);
    const auto first = line.find_first_not_of(" \t\r\n");
    const auto last = line.find_last_not_of(" \t\r\n");
    if (first == std::string::npos)
        return "";
    line = line.substr(first, last - first + 1);
    constexpr size_t kMaxLength = 160;
    if (line.size() > kMaxLength) {
        size_t cut = kMaxLength - 3;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) // not inside a UTF-8 character
            --cut;
        line = line.substr(0, cut) + "...";
    }
    return line;
}

c10::ScalarType dtypeNamed(const std::string& name)
{
    if (name == "float16" || name == "half")
        return torch::kHalf;
    if (name == "bfloat16")
        return torch::kBFloat16;
    if (name == "float64" || name == "double")
        return torch::kDouble;
    if (name == "float32" || name == "float")
        return torch::kFloat;
    throw std::invalid_argument("unknown dtype '" + name + "' (float16, bfloat16, float32 or float64)");
}

struct Batch
{
    std::vector<torch::Tensor> inputs;
    torch::Tensor targets;
    std::string lossName;
    int64_t step = -1;
};

torch::Tensor toTorch(const TensorView& view)
{
    static const std::map<DType, c10::ScalarType> types{
        {DType::Float32, torch::kFloat},  {DType::Float64, torch::kDouble}, {DType::Float16, torch::kHalf},
        {DType::BFloat16, torch::kBFloat16}, {DType::Int64, torch::kLong}, {DType::Int32, torch::kInt},
        {DType::Int16, torch::kShort},    {DType::Int8, torch::kChar},     {DType::UInt8, torch::kByte},
        {DType::Bool, torch::kBool}};
    std::vector<uint8_t> bytes = view.contiguousBytes();
    return torch::from_blob(bytes.data(), view.shape, types.at(view.dtype)).clone();
}

// The batch is read with the project's restricted unpickler: a batch file is data, and reading
// it must not run anything named in it.
Result<Batch> readBatch(const std::string& path)
{
    auto tree = readPickledFile(path);
    if (!tree)
        return Error{tree.error()};
    if (tree->kind != PickledValue::Kind::Dict)
        return Error{path + ": a batch file must hold a dict with \"inputs\" (and \"targets\", \"loss\")"};
    Batch batch;
    const PickledValue* inputs = tree->find("inputs");
    if (!inputs)
        return Error{path + ": the batch has no \"inputs\""};
    if (inputs->isTensor())
        batch.inputs.push_back(toTorch(*inputs->tensor));
    else if (inputs->kind == PickledValue::Kind::List) {
        for (const auto& item : inputs->items) {
            if (!item.isTensor())
                return Error{path + ": \"inputs\" must be a tensor or a list of tensors"};
            batch.inputs.push_back(toTorch(*item.tensor));
        }
    } else
        return Error{path + ": \"inputs\" must be a tensor or a list of tensors"};
    if (batch.inputs.empty())
        return Error{path + ": the batch has no \"inputs\""};
    if (const PickledValue* targets = tree->find("targets"); targets && targets->isTensor())
        batch.targets = toTorch(*targets->tensor);
    if (const PickledValue* loss = tree->find("loss"); loss && loss->kind == PickledValue::Kind::String)
        batch.lossName = loss->text;
    if (const PickledValue* step = tree->find("step"); step && step->kind == PickledValue::Kind::Int)
        batch.step = step->integer;
    return batch;
}

// LibTorch's messages run over many lines (a TorchScript traceback, then the error itself). The
// line that says what went wrong is the last "SomethingError: ..." line, else the first line.
std::string causeLine(const std::string& message)
{
    std::istringstream lines(message);
    std::string line, first, cause;
    while (std::getline(lines, line)) {
        if (first.empty() && line.find_first_not_of(" \t") != std::string::npos)
            first = line;
        const auto colon = line.find("Error: ");
        if (colon != std::string::npos && line.find(' ') > colon)
            cause = line.substr(colon + 7);
    }
    return cause.empty() ? first : cause;
}

// Python's names, as the user wrote the batch: "float32", not LibTorch's "Float".
std::string dtypeNameOf(c10::ScalarType type)
{
    switch (type) {
    case torch::kFloat: return "float32";
    case torch::kDouble: return "float64";
    case torch::kHalf: return "float16";
    case torch::kBFloat16: return "bfloat16";
    case torch::kLong: return "int64";
    case torch::kInt: return "int32";
    case torch::kShort: return "int16";
    case torch::kChar: return "int8";
    case torch::kByte: return "uint8";
    case torch::kBool: return "bool";
    default: return c10::toString(type);
    }
}

// "float32 [4, 5]"
std::string describeTensor(const torch::Tensor& tensor)
{
    std::string text = dtypeNameOf(tensor.scalar_type()) + " [";
    for (int64_t d = 0; d < tensor.dim(); ++d)
        text += (d ? ", " : "") + std::to_string(tensor.size(d));
    return text + "]";
}

torch::Tensor firstTensor(const c10::IValue& value)
{
    if (value.isTensor())
        return value.toTensor();
    if (value.isTuple())
        for (const auto& e : value.toTupleRef().elements())
            if (e.isTensor())
                return e.toTensor();
    if (value.isList())
        for (const auto& e : value.toListRef())
            if (e.isTensor())
                return e.toTensor();
    return {};
}

torch::Tensor computeLoss(const std::string& name, const torch::Tensor& output, const torch::Tensor& targets)
{
    namespace F = torch::nn::functional;
    const auto out = output.to(torch::kFloat); // losses in fp32, as AMP does
    if (name == "cross_entropy")
        return F::cross_entropy(out, targets.to(torch::kLong));
    if (name == "nll")
        return F::nll_loss(out, targets.to(torch::kLong));
    if (name == "mse")
        return F::mse_loss(out, targets.to(torch::kFloat).view_as(out));
    if (name == "bce_with_logits")
        return F::binary_cross_entropy_with_logits(out, targets.to(torch::kFloat).view_as(out));
    throw std::invalid_argument("unknown loss '" + name + "' (cross_entropy, mse, nll, bce_with_logits)");
}

bool isOp(const Node* node)
{
    const auto kind = node->kind();
    return !kind.is_prim() || kind == c10::prim::PythonOp;
}

// ---- the probes: how every op the forward runs is seen, inside `if` and loop blocks too
//
// A graph output can only be a value of the graph's top level, so ops inside a prim::If (a loss
// under `if labels is not None:`) or a prim::Loop were never seen. Instead, after every op of
// every block, the replay inserts a call to nanscope::probe(id, inputs, outputs), which records
// the op's tensors as it runs, once per execution: each loop iteration is a record of its own.

struct ProbeRecord
{
    int64_t id = 0; // the probed node
    std::vector<torch::Tensor> inputs, outputs;
};

thread_local std::vector<ProbeRecord>* t_probeRecords = nullptr;

const torch::jit::RegisterOperators kProbeOperator({torch::jit::Operator(
    "nanscope::probe(int id, Tensor[] inputs, Tensor[] outputs) -> ()",
    [](torch::jit::Stack& stack) {
        auto outputs = torch::jit::pop(stack).toTensorVector();
        auto inputs = torch::jit::pop(stack).toTensorVector();
        const int64_t id = torch::jit::pop(stack).toInt();
        if (t_probeRecords)
            t_probeRecords->push_back({id, std::move(inputs), std::move(outputs)});
    },
    c10::AliasAnalysisKind::CONSERVATIVE)});

// Collects the records of the probes while it lives (one replay at a time per thread).
class ProbeRecording
{
public:
    ProbeRecording() { t_probeRecords = &m_records; }
    ~ProbeRecording() { t_probeRecords = nullptr; }
    std::vector<ProbeRecord>& records() { return m_records; }

private:
    std::vector<ProbeRecord> m_records;
};

bool isTensorValue(const Value* v)
{
    return v->type()->cast<c10::TensorType>() != nullptr;
}

void collectOps(torch::jit::Block* block, std::vector<Node*>& out)
{
    for (Node* node : block->nodes()) {
        if (isOp(node) && std::any_of(node->outputs().begin(), node->outputs().end(), isTensorValue))
            out.push_back(node);
        for (torch::jit::Block* sub : node->blocks())
            collectOps(sub, out);
    }
}

// Inserts a probe after every op of every block; returns the probed nodes, by probe id.
std::vector<Node*> insertProbes(torch::jit::Graph& graph)
{
    std::vector<Node*> ops;
    collectOps(graph.block(), ops);
    static const c10::Symbol probe = c10::Symbol::fromQualString("nanscope::probe");
    for (size_t id = 0; id < ops.size(); ++id) {
        Node* node = ops[id];
        torch::jit::WithInsertPoint after(node->next());
        std::vector<Value*> inputs, outputs;
        for (Value* v : node->inputs())
            if (isTensorValue(v))
                inputs.push_back(v);
        for (Value* v : node->outputs())
            if (isTensorValue(v))
                outputs.push_back(v);
        Value* idValue = graph.insertConstant(int64_t(id));
        Value* inputList = graph.insertNode(graph.createList(c10::TensorType::get(), inputs))->output();
        Value* outputList = graph.insertNode(graph.createList(c10::TensorType::get(), outputs))->output();
        graph.insertNode(graph.create(probe, {idValue, inputList, outputList}, 0));
    }
    return ops;
}

// The values computed from the batch (the graph's inputs after `self`), in every block: an op's
// outputs are when any of its inputs is, or any value its blocks return. Ops on constants and
// weights alone (an attention mask of finfo.min, a position table) are not.
// Tensors, or containers of them: what carries data. A size read off the batch (x.shape[1])
// does not: a mask built to that size holds no value of the batch.
bool carriesTensors(const c10::TypePtr& type)
{
    if (type->cast<c10::TensorType>())
        return true;
    for (const auto& contained : type->containedTypes())
        if (carriesTensors(contained))
            return true;
    return false;
}

void markDataValues(torch::jit::Block* block, std::set<const Value*>& data)
{
    for (Node* node : block->nodes()) {
        bool fromData = std::any_of(node->inputs().begin(), node->inputs().end(), [&](const Value* v) {
            return data.count(v) > 0 && carriesTensors(v->type());
        });
        for (torch::jit::Block* sub : node->blocks()) {
            if (fromData)
                for (Value* v : sub->inputs())
                    data.insert(v);
            markDataValues(sub, data);
            fromData = fromData || std::any_of(sub->outputs().begin(), sub->outputs().end(),
                                               [&](const Value* v) { return data.count(v) > 0; });
        }
        if (fromData)
            for (Value* v : node->outputs())
                data.insert(v);
    }
}

// True for an op inside a loop's body (its records are numbered by iteration).
bool insideLoop(const Node* node)
{
    for (const torch::jit::Block* block = node->owningBlock(); block && block->owningNode();
         block = block->owningNode()->owningBlock())
        if (block->owningNode()->kind() == c10::prim::Loop)
            return true;
    return false;
}

bool isLogSoftmax(const Node* node);

bool isSoftmax(const Node* node)
{
    const auto kind = node->kind();
    return kind == c10::aten::softmax || kind == c10::aten::_softmax || isLogSoftmax(node);
}

bool isLogSoftmax(const Node* node)
{
    return node->kind() == c10::aten::log_softmax || node->kind() == c10::aten::_log_softmax;
}

// The dim a softmax, log_softmax or loss reads its classes along: the op's own constant dim
// argument for a softmax, 1 for a cross-entropy of batched input (PyTorch's class dim), else the last.
int64_t classDimOf(const Node* node, const torch::Tensor& input)
{
    if (input.dim() == 0)
        return 0;
    if (isSoftmax(node) && node->inputs().size() > 1)
        if (auto dim = torch::jit::toIValue(node->input(1)); dim && dim->isInt())
            return dim->toInt() < 0 ? dim->toInt() + input.dim() : dim->toInt();
    if ((node->kind() == c10::aten::cross_entropy_loss || node->kind() == c10::aten::nll_loss ||
         node->kind() == c10::aten::nll_loss_nd) && input.dim() >= 2)
        return 1;
    return input.dim() - 1;
}

// The mean over rows (along `dim`) of the entropy -sum p log p of a softmax's output (of a
// log_softmax's, read as log p). A row holding NaN or +Inf has no entropy and is left out.
std::optional<double> meanRowEntropy(const torch::Tensor& output, int64_t dim, bool logProbabilities)
{
    torch::NoGradGuard noGrad;
    const torch::Tensor x = output.detach().to(torch::kDouble);
    if (x.dim() == 0 || x.size(dim) == 0)
        return std::nullopt;
    const torch::Tensor p = logProbabilities ? x.exp() : x;
    const torch::Tensor logP = logProbabilities ? x : x.log();
    const torch::Tensor entropy = -torch::where(p > 0, p * logP, torch::zeros_like(p)).sum(dim);
    const torch::Tensor valid = (~torch::isnan(x) & (x != std::numeric_limits<double>::infinity())).all(dim);
    const int64_t rows = valid.sum().item<int64_t>();
    if (rows == 0)
        return std::nullopt;
    return torch::where(valid, entropy, torch::zeros_like(entropy)).sum().item<double>() / double(rows);
}

// log Z = logsumexp along the class dim, per row, summarised over the rows where it is finite.
LogitsSignature logZOf(const torch::Tensor& logits, int64_t dim, std::string from, int opIndex)
{
    torch::NoGradGuard noGrad;
    LogitsSignature signature;
    signature.from = std::move(from);
    signature.opIndex = opIndex;
    torch::Tensor x = logits.detach().to(torch::kDouble);
    if (x.dim() == 0)
        x = x.reshape({1, 1});
    else
        x = x.movedim(dim, -1).reshape({-1, x.size(dim)});
    if (x.numel() == 0)
        return signature;
    const torch::Tensor logZ = torch::logsumexp(x, -1);
    const torch::Tensor finite = logZ.masked_select(torch::isfinite(logZ));
    signature.rows = finite.numel();
    if (signature.rows > 0) {
        signature.logZMean = finite.mean().item<double>();
        signature.logZMin = finite.min().item<double>();
        signature.logZMax = finite.max().item<double>();
    }
    return signature;
}

// Every tensor a forward returned (a tensor, or inside a tuple, list or dict).
void collectTensors(const c10::IValue& value, std::vector<torch::Tensor>& tensors)
{
    if (value.isTensor())
        tensors.push_back(value.toTensor());
    else if (value.isTuple())
        for (const auto& e : value.toTupleRef().elements())
            collectTensors(e, tensors);
    else if (value.isList())
        for (const auto& e : value.toListRef())
            collectTensors(e, tensors);
    else if (value.isGenericDict())
        for (const auto& entry : value.toGenericDict())
            collectTensors(entry.value(), tensors);
}

// An entry of what forward returned, by name: a dict's "loss" or a NamedTuple's `loss` field.
std::optional<c10::IValue> namedEntry(const c10::IValue& value, const c10::TypePtr& type, const std::string& name,
                                      std::string& access)
{
    if (value.isGenericDict()) {
        for (const auto& entry : value.toGenericDict())
            if (entry.key().isString() && entry.key().toStringRef() == name) {
                access = "['" + name + "']";
                return entry.value();
            }
        return std::nullopt;
    }
    if (value.isTuple())
        if (auto tuple = type ? type->cast<c10::TupleType>() : nullptr)
            if (auto names = tuple->names()) {
                const auto& elements = value.toTupleRef().elements();
                for (size_t i = 0; i < names->size() && i < elements.size(); ++i)
                    if (std::string((*names)[i]) == name) {
                        access = "." + name;
                        return elements[i];
                    }
            }
    return std::nullopt;
}

// The loss a forward returned, the Hugging Face way: a scalar tensor, a dict with a "loss" entry,
// a NamedTuple with a `loss` field, or a tuple whose first element is a scalar tensor. `loss` is
// undefined when there is none; a named "loss" that is not a scalar is returned as it is, so that
// the caller can say so.
struct ReturnedLoss
{
    torch::Tensor loss;
    std::string access; // "" (the scalar itself), "['loss']", ".loss", "[0]"
    torch::Tensor logits; // a "logits" entry, when there is one
    std::string logitsAccess;
};

ReturnedLoss lossInOutput(const c10::IValue& value, const c10::TypePtr& type)
{
    auto isScalar = [](const torch::Tensor& t) { return t.defined() && t.dim() == 0 && t.is_floating_point(); };
    ReturnedLoss returned;
    if (auto logits = namedEntry(value, type, "logits", returned.logitsAccess); logits && logits->isTensor())
        returned.logits = logits->toTensor();
    if (value.isTensor()) {
        if (isScalar(value.toTensor()))
            returned.loss = value.toTensor();
        return returned;
    }
    if (auto loss = namedEntry(value, type, "loss", returned.access)) {
        if (loss->isTensor())
            returned.loss = loss->toTensor();
        return returned;
    }
    if (value.isTuple() && !value.toTupleRef().elements().empty()) {
        const auto& first = value.toTupleRef().elements()[0];
        if (first.isTensor() && isScalar(first.toTensor())) {
            returned.loss = first.toTensor();
            returned.access = "[0]";
        }
    }
    return returned;
}

// What a forward returned, for messages: "float32 [8, 3]", "a dict (keys: logits, hidden)".
std::string describeReturn(const c10::IValue& value)
{
    if (value.isTensor())
        return describeTensor(value.toTensor());
    if (value.isGenericDict()) {
        std::string keys;
        for (const auto& entry : value.toGenericDict())
            keys += (keys.empty() ? "" : ", ") + (entry.key().isString() ? entry.key().toStringRef() : entry.key().tagKind());
        return "a dict (keys: " + (keys.empty() ? std::string("none") : keys) + ")";
    }
    if (value.isTuple()) {
        std::string items;
        for (const auto& e : value.toTupleRef().elements())
            items += (items.empty() ? "" : ", ") + (e.isTensor() ? describeTensor(e.toTensor()) : e.tagKind());
        return "a tuple (" + items + ")";
    }
    return value.tagKind();
}

class Replayer
{
public:
    Replayer(const ReplayOptions& options, const ProgressCallback& progress)
        : m_options(options)
        , m_progress(progress)
    {
    }

    Result<ReplayResult> run()
    {
        ReplayResult result;
        auto batch = readBatch(m_options.batch);
        if (!batch)
            return Error{batch.error()};
        m_batch = std::move(*batch);
        result.step = m_batch.step;
        result.lossName = m_batch.lossName.empty() ? m_options.lossName : m_batch.lossName;
        m_device = torch::Device(m_options.device == "cuda" ? torch::kCUDA : torch::kCPU);
        if (m_device.is_cuda() && !torch::cuda::is_available())
            return Error{"--device cuda: this LibTorch build has no CUDA, or no GPU is visible"};
        m_dtype = dtypeNamed(m_options.dtype);

        if (!reportProgress(m_progress, 0.05, "loading checkpoint"))
            return Error{"cancelled"};
        // torch::jit::load checks no CRC: a flipped byte in a weight would replay silently wrong
        // numbers. The archive is checked as the tensor statistics check it, before LibTorch reads it.
        auto archive = ZipArchive::open(m_options.checkpoint);
        if (!archive)
            return Error{archive.error()};
        if (Status intact = archive->verifyChecksums(); !intact)
            return Error{intact.error()};
        try {
            m_module = torch::jit::load(m_options.checkpoint, m_device);
            m_modulePaths = modulePathsOf(m_module);
        } catch (const c10::Error& e) {
            return Error{m_options.checkpoint + ": not a TorchScript archive that can replay (" +
                         causeLine(e.what_without_backtrace()) + "); a state_dict gives tensor statistics only"};
        } catch (const std::exception& e) {
            return Error{m_options.checkpoint + ": not a TorchScript archive that can replay (" + causeLine(e.what()) +
                         ")"};
        }
        if (!m_module.find_method("forward"))
            return Error{m_options.checkpoint + ": the TorchScript module has no forward method"};
        m_module.train(!m_options.eval);
        m_module.to(m_dtype);
        for (auto& input : m_batch.inputs) {
            input = input.to(m_device);
            if (input.is_floating_point())
                input = input.to(m_dtype);
        }
        if (m_batch.targets.defined())
            m_batch.targets = m_batch.targets.to(m_device);

        if (!reportProgress(m_progress, 0.15, "instrumented forward"))
            return Error{"cancelled"};
        const auto started = std::chrono::steady_clock::now();
        Status status = instrumentedForward(result);
        result.instrumentedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        if (!status)
            return Error{status.error()};
        if (m_options.bisect) {
            if (!reportProgress(m_progress, 0.6, "bisecting samples"))
                return Error{"cancelled"};
            result.bisected = true;
            m_convention = result.lossConvention;
            m_lossName = result.lossName;
            result.badSamples = findBadSamples(result.notes);
        }
        reportProgress(m_progress, 1.0, "done");
        return result;
    }

private:
    // One line: the batch file, what it holds, what the model's first layer takes, and LibTorch's
    // own cause ("mat1 and mat2 shapes cannot be multiplied (4x5 and 16x16)"), instead of its
    // multi-line TorchScript traceback.
    std::string forwardFailure(const std::string& cause) const
    {
        std::string inputs;
        for (const auto& input : m_batch.inputs)
            inputs += (inputs.empty() ? "" : ", ") + describeTensor(input);
        std::string expected;
        for (const auto& parameter : m_module.named_parameters(/*recurse=*/true)) {
            expected = "; the model's first parameter " + parameter.name + " is " + describeTensor(parameter.value);
            break;
        }
        return m_options.batch + ": the model's forward failed on this batch, which holds " +
               (m_batch.inputs.size() == 1 ? "input " : "inputs ") + inputs + expected + ": " + cause;
    }

    // "forward(x, labels)": the argument names of the model's forward, for saying where the loss came from.
    std::string forwardCall() const
    {
        std::string arguments;
        const auto& schema = m_module.get_method("forward").function().getSchema();
        for (size_t i = 1; i < schema.arguments().size(); ++i)
            arguments += (i > 1 ? ", " : "") + schema.arguments()[i].name();
        return "forward(" + arguments + ")";
    }

    // The inputs forward is called with: the batch's inputs, and its targets too when forward takes
    // one argument more than the batch has inputs (a model that computes its loss in forward).
    Status chooseForwardInputs(size_t expectedInputs)
    {
        m_forwardInputs = m_batch.inputs;
        m_targetsInForward = false;
        if (m_batch.inputs.size() == expectedInputs)
            return Status::success();
        if (m_batch.targets.defined() && m_batch.inputs.size() + 1 == expectedInputs) {
            torch::Tensor targets = m_batch.targets;
            if (targets.is_floating_point())
                targets = targets.to(m_dtype);
            m_forwardInputs.push_back(targets);
            m_targetsInForward = true;
            return Status::success();
        }
        return Error{m_options.batch + ": the batch has " + std::to_string(m_batch.inputs.size()) + " input tensor(s)" +
                     (m_batch.targets.defined() ? " and targets" : "") + " but the model's " + forwardCall() + " takes " +
                     std::to_string(expectedInputs)};
    }

    Status instrumentedForward(ReplayResult& result)
    {
        auto graph = m_module.get_method("forward").graph()->copy();
        torch::jit::Inline(*graph);
        const size_t originalOutputs = graph->outputs().size();
        m_returnType = graph->outputs()[0]->type();

        std::set<const Value*> dataValues(graph->inputs().begin() + 1, graph->inputs().end());
        markDataValues(graph->block(), dataValues);
        // Every op of every block is probed (see insertProbes): its tensors are recorded as it runs.
        const std::vector<Node*> probedOps = insertProbes(*graph);

        // The plain interpreter: no profiling or fusion, so every op runs as written.
        // Without this, the executor would build differentiable subgraphs (symbolic autodiff)
        // whose backward ignores the recorded values; eager autograd sees every value.
        torch::jit::getProfilingMode() = false;
        torch::jit::getExecutorMode() = false;
        torch::jit::setGraphExecutorOptimize(false);
        torch::jit::GraphExecutor executor(graph, "nanscope_replay");
        torch::jit::Stack stack;
        stack.emplace_back(m_module._ivalue());
        if (Status inputs = chooseForwardInputs(graph->inputs().size() - 1); !inputs)
            return inputs;
        for (const auto& input : m_forwardInputs)
            stack.emplace_back(input);
        ProbeRecording recording;
        try {
            executor.run(stack);
        } catch (const c10::Error& e) {
            std::string hint;
            if (m_dtype == torch::kHalf && !m_device.is_cuda())
                hint = " (LibTorch has no float16 kernels for some CPU ops: use --dtype bfloat16 on CPU, or --device cuda)";
            return Error{forwardFailure(causeLine(e.what_without_backtrace())) + hint};
        } catch (const std::exception& e) {
            return Error{forwardFailure(causeLine(e.what()))};
        }
        if (stack.size() != originalOutputs)
            return Error{"internal: the instrumented forward returned " + std::to_string(stack.size()) + " values"};
        std::vector<ProbeRecord> records = std::move(recording.records());
        const c10::IValue returned = stack[0];

        // Which loss to back-propagate from. A loss forward returned wins: the model computed it
        // as it trained. Else the named loss of forward's output and the batch's targets.
        const ReturnedLoss inForward = lossInOutput(returned, m_returnType);
        torch::Tensor output; // forward's output under a named loss
        if (inForward.loss.defined() || m_targetsInForward) {
            result.lossConvention = LossConvention::InForward;
            result.lossName.clear();
            result.lossFrom = forwardCall() + inForward.access;
            if (!inForward.loss.defined())
                result.notes.push_back("the model's " + forwardCall() + " takes the targets but returned " +
                                       describeReturn(returned) +
                                       ", not a loss (a scalar tensor, or a dict or tuple with a 'loss' entry): backward skipped");
            else if (inForward.loss.dim() != 0)
                result.notes.push_back("the loss " + result.lossFrom + " is " + describeTensor(inForward.loss) +
                                       ", not a scalar: backward needs one number (reduce it in forward, with .mean()); backward skipped");
        } else {
            output = firstTensor(returned);
            if (!output.defined())
                return Error{m_options.checkpoint + ": forward returned " + describeReturn(returned) +
                             ": no tensor to compute a loss of, and no 'loss' entry"};
            if (m_batch.targets.defined() && !result.lossName.empty()) {
                result.lossConvention = LossConvention::NamedLoss;
                result.lossFrom = result.lossName + "(output, targets)";
            } else if (!m_batch.targets.defined() && m_forwardInputs.size() >= 2) {
                result.notes.push_back("the batch has no targets, and the model's " + forwardCall() + " returned " +
                                       describeReturn(returned) +
                                       ", not a loss: a model that computes its loss in forward must return a scalar "
                                       "tensor, or a dict or tuple with a 'loss' entry; backward skipped");
            } else {
                result.notes.push_back(m_batch.targets.defined() ? "no loss name in the batch or the run: backward skipped"
                                                                 : "the batch has no targets: backward skipped");
            }
        }

        for (auto& record : records)
            for (auto& v : record.outputs)
                if (v.defined() && v.requires_grad() && !v.is_leaf())
                    v.retain_grad();

        // Statistics once per tensor: an op's input is usually the previous op's output.
        std::map<const c10::TensorImpl*, std::optional<TensorStats>> statsCache;
        auto statsFor = [&](const torch::Tensor& t) -> std::optional<TensorStats> {
            if (!t.defined())
                return std::nullopt;
            auto it = statsCache.find(t.unsafeGetTensorImpl());
            if (it == statsCache.end())
                it = statsCache.emplace(t.unsafeGetTensorImpl(), statsOf(t)).first;
            return it->second;
        };

        std::vector<ReplayOp> allOps;
        std::vector<const Node*> opNodes;
        std::vector<const ProbeRecord*> opRecords;
        std::map<int64_t, int> executions; // probe id -> times run so far
        for (const ProbeRecord& record : records) {
            if (record.id < 0 || size_t(record.id) >= probedOps.size() || record.outputs.empty())
                continue;
            const Node* node = probedOps[size_t(record.id)];
            const int iteration = executions[record.id]++;
            ReplayOp op;
            op.index = int(allOps.size());
            op.op = node->kind().toQualString();
            op.module = modulePathOf(node, m_modulePaths);
            op.source = sourceOf(node);
            op.code = codeOf(node);
            if (insideLoop(node))
                op.iteration = iteration;
            op.fromData = std::any_of(node->outputs().begin(), node->outputs().end(),
                                      [&](const Value* v) { return dataValues.count(v) > 0; });
            const torch::Tensor& outputValue = record.outputs.front();
            op.output = statsFor(outputValue);
            op.headroom = precisionHeadroomOf(op.output);
            if (auto fn = outputValue.grad_fn())
                op.gradFunction = fn->name();
            for (const torch::Tensor& input : record.inputs)
                op.inputs.push_back(statsFor(input));
            if (isSoftmax(node) && !op.inputs.empty() && op.inputs.front() && outputValue.dim() > 0) {
                SoftmaxSignature softmax;
                softmax.inputAbsmax = op.inputs.front()->absmax;
                const int64_t dim = classDimOf(node, outputValue);
                softmax.entropy = meanRowEntropy(outputValue, dim, isLogSoftmax(node));
                softmax.uniformEntropy = std::log(double(outputValue.size(dim)));
                op.softmax = softmax;
            }
            allOps.push_back(std::move(op));
            opNodes.push_back(node);
            opRecords.push_back(&record);
            m_opValues.push_back(outputValue);
        }
        auto opIndexOf = [&](const torch::Tensor& tensor) {
            for (size_t i = 0; i < m_opValues.size(); ++i)
                if (tensor.defined() && m_opValues[i].unsafeGetTensorImpl() == tensor.unsafeGetTensorImpl())
                    return int(i);
            return -1;
        };

        result.firstNonfinite = forwardCulprit(allOps, result.notes);

        // Output-logit divergence, on the logits the loss reads.
        if (result.lossConvention == LossConvention::NamedLoss && (result.lossName == "cross_entropy" || result.lossName == "nll") &&
            output.is_floating_point())
            result.logits = logZOf(output, output.dim() >= 2 ? 1 : 0, "forward's output", opIndexOf(output));
        else if (result.lossConvention == LossConvention::InForward) {
            if (inForward.logits.defined() && inForward.logits.is_floating_point())
                result.logits = logZOf(inForward.logits, inForward.logits.dim() - 1, "forward's output" + inForward.logitsAccess,
                                       opIndexOf(inForward.logits));
            else
                for (size_t i = opNodes.size(); i-- > 0;) {
                    const Node* node = opNodes[i];
                    if (!isSoftmax(node) && node->kind() != c10::aten::cross_entropy_loss)
                        continue;
                    const torch::Tensor logits =
                        opRecords[i]->inputs.empty() ? torch::Tensor() : opRecords[i]->inputs.front();
                    if (!logits.defined() || !logits.is_floating_point())
                        continue;
                    result.logits = logZOf(logits, classDimOf(node, logits), "the input of " + allOps[i].op + " (op #" +
                                           std::to_string(i) + ")", opIndexOf(logits));
                    break;
                }
        }

        // Loss and backward.
        torch::Tensor loss;
        if (result.lossConvention == LossConvention::InForward && inForward.loss.defined() && inForward.loss.dim() == 0) {
            loss = inForward.loss;
            if (const int index = opIndexOf(loss); index >= 0)
                result.lossOp = allOps[size_t(index)];
        } else if (result.lossConvention == LossConvention::NamedLoss && m_options.backward) {
            try {
                loss = computeLoss(result.lossName, output, m_batch.targets);
            } catch (const std::exception& e) {
                std::ostringstream shapes;
                shapes << "the model's output " << output.sizes() << " does not fit the batch's targets "
                       << m_batch.targets.sizes() << " for the " << result.lossName << " loss";
                return Error{m_options.batch + ": " + shapes.str()};
            }
        }
        if (loss.defined()) {
            result.loss = loss.item<double>();
            result.lossFinite = std::isfinite(result.loss);
        }
        if (loss.defined() && m_options.backward) {
            if (!reportProgress(m_progress, 0.4, "backward"))
                return Error{"cancelled"};
            try {
                if (loss.requires_grad())
                    loss.backward();
            } catch (const c10::Error& e) {
                return Error{std::string("backward failed: ") + e.what_without_backtrace()};
            }
            for (size_t i = 0; i < allOps.size(); ++i)
                if (m_opValues[i].requires_grad())
                    allOps[i].grad = statsOf(m_opValues[i].grad());
            result.firstNonfiniteGrad = firstNonfiniteGradient(allOps);
            // A finite forward whose backward is not: the op whose backward made the first
            // non-finite gradient out of a finite one (log of a zero that a torch.where masked out).
            if (!result.firstNonfinite)
                for (size_t i = allOps.size(); i-- > 0;) {
                    if (!allOps[i].grad || hasNonfinite(allOps[i].grad))
                        continue;
                    const auto& inputs = opRecords[i]->inputs;
                    const bool madeNonfinite = std::any_of(inputs.begin(), inputs.end(), [&](const torch::Tensor& t) {
                        return t.defined() && t.requires_grad() && t.grad().defined() && !torch::isfinite(t.grad()).all().item<bool>();
                    });
                    if (madeNonfinite) {
                        result.gradCulprit = allOps[i];
                        break;
                    }
                }
            for (const auto& p : m_module.named_parameters(true))
                result.params.push_back({p.name, statsOf(p.value), statsOf(p.value.grad())});
        }
        if (result.firstNonfinite)
            result.firstNonfinite->grad = allOps[size_t(result.firstNonfinite->index)].grad;
        if (result.lossOp)
            result.lossOp->grad = allOps[size_t(result.lossOp->index)].grad;
        result.findings = judgeReplaySignatures(allOps, result.lossOp);

        result.ops = opsWithinLayer(std::move(allOps), m_options.layerPrefix,
                                    result.firstNonfinite ? result.firstNonfinite->index : -1);
        return Status::success();
    }

    // True when a forward over these samples, its loss or the gradients of that loss hold any
    // non-finite value: a loss in forward is per-sample this way, by calling forward on the subset.
    bool isBad(const std::vector<int64_t>& samples)
    {
        const int64_t n = m_batch.inputs.front().size(0);
        const auto index = torch::tensor(samples, torch::kLong).to(m_device);
        std::vector<c10::IValue> inputs;
        for (const auto& input : m_forwardInputs)
            inputs.emplace_back(input.dim() > 0 && input.size(0) == n ? input.index_select(0, index) : input);
        try {
            const c10::IValue returned = m_module.forward(inputs);
            std::vector<torch::Tensor> tensors;
            collectTensors(returned, tensors);
            for (const auto& t : tensors)
                if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>())
                    return true;
            torch::Tensor loss;
            if (m_convention == LossConvention::InForward)
                loss = lossInOutput(returned, m_returnType).loss;
            else if (m_convention == LossConvention::NamedLoss)
                loss = computeLoss(m_lossName, firstTensor(returned), m_batch.targets.index_select(0, index));
            if (!loss.defined() || loss.dim() != 0)
                return false;
            if (!std::isfinite(loss.item<double>()))
                return true;
            if (!m_options.backward || !loss.requires_grad())
                return false;
            std::vector<torch::Tensor> parameters;
            for (const auto& p : m_module.parameters(true))
                if (p.requires_grad())
                    parameters.push_back(p);
            if (parameters.empty())
                return false;
            for (const auto& g : torch::autograd::grad({loss}, parameters, {}, false, false, /*allow_unused=*/true))
                if (g.defined() && !torch::isfinite(g).all().item<bool>())
                    return true;
        } catch (const std::exception&) {
            return true; // a subset the model cannot run counts against it; the caller pads subsets
        }
        return false;
    }

    std::vector<int64_t> join(std::vector<int64_t> a, const std::vector<int64_t>& b)
    {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    }

    // Bisection. BatchNorm in training mode cannot run a one-sample batch, and a NaN sample
    // poisons the batch statistics of its whole batch; so every subset is padded with samples
    // known to be clean, and a subset is bad when it makes the padded batch non-finite.
    std::vector<int64_t> findBadSamples(std::vector<std::string>& notes)
    {
        const int64_t n = m_batch.inputs.front().size(0);
        std::vector<int64_t> all(static_cast<size_t>(n));
        std::iota(all.begin(), all.end(), 0);
        if (!isBad(all))
            return {};
        // Clean padding: the largest clean half found by halving.
        std::vector<int64_t> clean;
        std::vector<std::vector<int64_t>> queue{all};
        while (!queue.empty() && clean.empty()) {
            auto set = queue.front();
            queue.erase(queue.begin());
            if (set.size() < 2)
                continue;
            const auto mid = set.begin() + long(set.size() / 2);
            for (auto half : {std::vector<int64_t>(set.begin(), mid), std::vector<int64_t>(mid, set.end())}) {
                if (half.size() >= 2 && !isBad(half)) {
                    clean = half;
                    break;
                }
                queue.push_back(half);
            }
        }
        if (clean.empty()) {
            notes.push_back("no clean subset of two or more samples was found: every sample is reported");
            return all;
        }
        if (clean.size() > 4)
            clean.resize(4);
        std::vector<int64_t> bad;
        std::function<void(const std::vector<int64_t>&)> search = [&](const std::vector<int64_t>& set) {
            if (set.empty() || !isBad(join(set, clean)))
                return;
            if (set.size() == 1) {
                bad.push_back(set.front());
                return;
            }
            const auto mid = set.begin() + long(set.size() / 2);
            search(std::vector<int64_t>(set.begin(), mid));
            search(std::vector<int64_t>(mid, set.end()));
        };
        std::vector<int64_t> rest;
        for (int64_t i : all)
            if (std::find(clean.begin(), clean.end(), i) == clean.end())
                rest.push_back(i);
        search(rest);
        std::sort(bad.begin(), bad.end());
        return bad;
    }

    ReplayOptions m_options;
    ProgressCallback m_progress;
    Batch m_batch;
    torch::jit::Module m_module;
    torch::Device m_device = torch::kCPU;
    c10::ScalarType m_dtype = torch::kFloat;
    std::vector<torch::Tensor> m_opValues;
    std::set<std::string> m_modulePaths; // named_modules() of the checkpoint
    std::vector<torch::Tensor> m_forwardInputs; // the batch's inputs, and its targets when forward takes them
    bool m_targetsInForward = false;
    c10::TypePtr m_returnType;                   // of forward, for reading a loss out of what it returns
    LossConvention m_convention = LossConvention::None;
    std::string m_lossName;
};

} // namespace

std::string libtorchVersion()
{
    return TORCH_VERSION;
}

Result<ReplayResult> replayStep(const ReplayOptions& options, const ProgressCallback& progress)
{
    try {
        Replayer replayer(options, progress);
        return replayer.run();
    } catch (const c10::Error& e) {
        return Error{std::string("replay failed: ") + e.what_without_backtrace()};
    } catch (const std::exception& e) {
        return Error{std::string("replay failed: ") + e.what()};
    }
}

} // namespace nanscope
