#include "core/torch/Replay.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/run/LayerNames.h"
#include "core/torch/TensorRange.h"
#include "core/checkpoint/ZipArchive.h"

#include <torch/csrc/jit/frontend/source_range.h>
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

std::string modulePathOf(const Node* node)
{
    auto callstack = node->callstack();
    if (!callstack)
        return "";
    std::string path;
    for (const auto& entry : (*callstack)->vec()) {
        const auto& info = std::get<2>(entry);
        if (!info)
            continue;
        const std::string name = info->instance_name();
        if (name.empty() || name == "self")
            continue;
        path += (path.empty() ? "" : ".") + name;
    }
    return path;
}

std::string sourceOf(const Node* node)
{
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

    Status instrumentedForward(ReplayResult& result)
    {
        auto graph = m_module.get_method("forward").graph()->copy();
        torch::jit::Inline(*graph);
        const size_t originalOutputs = graph->outputs().size();

        // Every tensor produced at the top level of the graph becomes an extra graph output.
        std::vector<std::pair<Node*, Value*>> captured;
        std::map<const Value*, size_t> capturedIndex;
        for (Node* node : graph->nodes()) {
            if (node->kind() == c10::prim::Constant)
                continue;
            for (Value* output : node->outputs()) {
                if (!output->type()->cast<c10::TensorType>())
                    continue;
                capturedIndex[output] = captured.size();
                captured.emplace_back(node, output);
                graph->registerOutput(output);
            }
        }

        // The plain interpreter: no profiling or fusion, so every op runs as written.
        // Without this, the executor would build differentiable subgraphs (symbolic autodiff)
        // whose backward ignores the extra outputs; eager autograd sees every value.
        torch::jit::getProfilingMode() = false;
        torch::jit::getExecutorMode() = false;
        torch::jit::setGraphExecutorOptimize(false);
        torch::jit::GraphExecutor executor(graph, "nanscope_replay");
        torch::jit::Stack stack;
        stack.emplace_back(m_module._ivalue());
        const size_t expectedInputs = graph->inputs().size() - 1;
        if (m_batch.inputs.size() != expectedInputs)
            return Error{m_options.batch + ": the batch has " + std::to_string(m_batch.inputs.size()) +
                         " input tensor(s) but the model's forward takes " + std::to_string(expectedInputs)};
        for (const auto& input : m_batch.inputs)
            stack.emplace_back(input);
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
        if (stack.size() != originalOutputs + captured.size())
            return Error{"internal: the instrumented forward returned " + std::to_string(stack.size()) + " values"};
        std::vector<torch::Tensor> values;
        for (size_t i = 0; i < captured.size(); ++i)
            values.push_back(stack[originalOutputs + i].toTensor());
        const torch::Tensor output = firstTensor(stack[0]);
        if (!output.defined())
            return Error{m_options.checkpoint + ": forward returned " + stack[0].tagKind() + ", not a tensor"};

        // Graph inputs (the batch) are tensors too: they are what the first ops read.
        std::map<const Value*, torch::Tensor> inputValues;
        for (size_t i = 1; i < graph->inputs().size(); ++i)
            inputValues[graph->inputs()[i]] = m_batch.inputs[i - 1];
        auto tensorFor = [&](const Value* v) -> torch::Tensor {
            if (auto it = capturedIndex.find(v); it != capturedIndex.end())
                return values[it->second];
            if (auto it = inputValues.find(v); it != inputValues.end())
                return it->second;
            return {};
        };

        for (auto& v : values)
            if (v.requires_grad() && !v.is_leaf())
                v.retain_grad();

        // Statistics once per value: an op's input is usually the previous op's output.
        std::map<const Value*, std::optional<TensorStats>> statsCache;
        auto statsFor = [&](const Value* v) -> const std::optional<TensorStats>& {
            auto it = statsCache.find(v);
            if (it == statsCache.end())
                it = statsCache.emplace(v, statsOf(tensorFor(v))).first;
            return it->second;
        };

        std::vector<ReplayOp> allOps;
        std::set<const Node*> seen;
        for (const auto& [node, value] : captured) {
            if (!isOp(node) || !seen.insert(node).second)
                continue;
            ReplayOp op;
            op.index = int(allOps.size());
            op.op = node->kind().toQualString();
            op.module = modulePathOf(node);
            op.source = sourceOf(node);
            op.code = codeOf(node);
            op.output = statsFor(value);
            if (auto fn = values[capturedIndex[value]].grad_fn())
                op.gradFunction = fn->name();
            for (const Value* input : node->inputs())
                if (input->type()->cast<c10::TensorType>())
                    op.inputs.push_back(statsFor(input));
            allOps.push_back(std::move(op));
            m_opValues.push_back(values[capturedIndex[value]]);
        }

        // The culprit: non-finite out of finite in. Failing that, the first non-finite output.
        for (const auto& op : allOps) {
            if (!hasNonfinite(op.output))
                continue;
            const bool inputsFinite = std::none_of(op.inputs.begin(), op.inputs.end(),
                                                   [](const std::optional<TensorStats>& s) { return hasNonfinite(s); });
            if (inputsFinite) {
                result.firstNonfinite = op;
                break;
            }
            if (!result.firstNonfinite)
                result.firstNonfinite = op;
        }
        if (result.firstNonfinite && std::any_of(result.firstNonfinite->inputs.begin(), result.firstNonfinite->inputs.end(),
                                                 [](const std::optional<TensorStats>& s) { return hasNonfinite(s); }))
            result.notes.push_back("every non-finite output has a non-finite input: the NaN/Inf was already in the "
                                   "model's state (a parameter or buffer) or in the batch");

        // Loss and backward.
        if (!m_batch.targets.defined() || result.lossName.empty()) {
            result.notes.push_back(m_batch.targets.defined() ? "no loss name in the batch or the run: backward skipped"
                                                             : "the batch has no targets: backward skipped");
        } else if (m_options.backward && output.defined()) {
            if (!reportProgress(m_progress, 0.4, "backward"))
                return Error{"cancelled"};
            torch::Tensor loss;
            try {
                loss = computeLoss(result.lossName, output, m_batch.targets);
            } catch (const std::exception& e) {
                std::ostringstream shapes;
                shapes << "the model's output " << output.sizes() << " does not fit the batch's targets "
                       << m_batch.targets.sizes() << " for the " << result.lossName << " loss";
                return Error{m_options.batch + ": " + shapes.str()};
            }
            result.loss = loss.item<double>();
            result.lossFinite = std::isfinite(result.loss);
            try {
                if (loss.requires_grad())
                    loss.backward();
            } catch (const c10::Error& e) {
                return Error{std::string("backward failed: ") + e.what_without_backtrace()};
            }
            for (size_t i = 0; i < allOps.size(); ++i)
                if (m_opValues[i].requires_grad())
                    allOps[i].grad = statsOf(m_opValues[i].grad());
            for (size_t i = allOps.size(); i-- > 0;)
                if (hasNonfinite(allOps[i].grad)) {
                    result.firstNonfiniteGrad = allOps[i];
                    break;
                }
            for (const auto& p : m_module.named_parameters(true))
                result.params.push_back({p.name, statsOf(p.value), statsOf(p.value.grad())});
        }
        if (result.firstNonfinite)
            result.firstNonfinite->grad = allOps[size_t(result.firstNonfinite->index)].grad;

        // The layer filter lists the module's ops, and always the first non-finite op: a filter
        // must not hide the culprit the pane highlights.
        const int culprit = result.firstNonfinite ? result.firstNonfinite->index : -1;
        for (auto& op : allOps)
            if (m_options.layerPrefix.empty() || layernames::isWithin(op.module, m_options.layerPrefix) ||
                op.index == culprit)
                result.ops.push_back(std::move(op));
        return Status::success();
    }

    // True when a forward (plus loss) over these samples gives any non-finite value.
    bool isBad(const std::vector<int64_t>& samples)
    {
        torch::NoGradGuard noGrad;
        const auto index = torch::tensor(samples, torch::kLong).to(m_device);
        std::vector<c10::IValue> inputs;
        for (const auto& input : m_batch.inputs)
            inputs.emplace_back(input.index_select(0, index));
        try {
            const torch::Tensor out = firstTensor(m_module.forward(inputs));
            if (!torch::isfinite(out).all().item<bool>())
                return true;
            if (m_batch.targets.defined() && !m_lossName.empty())
                return !std::isfinite(computeLoss(m_lossName, out, m_batch.targets.index_select(0, index)).item<double>());
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
        m_lossName = m_batch.lossName.empty() ? m_options.lossName : m_batch.lossName;
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
