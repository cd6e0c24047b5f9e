#include "core/torch/Replay.h"

#include "core/checkpoint/ExportedProgram.h"
#include "core/checkpoint/ZipArchive.h"
#include "core/replay/ReplayJudgement.h"
#include "core/replay/SampleBisection.h"
#include "core/replay/ReplaySignatures.h"
#include "core/torch/ExportReplay.h"
#include "core/torch/GraphProbes.h"
#include "core/torch/GraphProvenance.h"
#include "core/torch/ReplayBatch.h"
#include "core/torch/ReplayOutputs.h"
#include "core/torch/ProbedOps.h"
#include "core/torch/ReplayAutocast.h"
#include "core/torch/SoftmaxMeasures.h"
#include "core/torch/TensorRange.h"
#include "core/torch/TorchDType.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <functional>
#include <numeric>
#include <set>
#include <map>
#include <sstream>

namespace nanscope {

namespace {

using torch::jit::Node;
using torch::jit::Value;
using namespace replaytorch;

// The one statistics kernel (core/tensor) over every value the replay captures: a single fused
// pass, accurate when the mean is large (a naive sum of squares here once lost the spread of values
// like 1e4 + small noise). Empty for an undefined tensor (no gradient reached it, say).
std::optional<TensorStats> statsOf(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    return torchutil::tensorStats(tensor);
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

// "aten::linear_from_the_future" of LibTorch's "Unknown builtin op: aten::linear_from_the_future."
// (a TorchScript archive that calls an op this LibTorch does not register); empty for other causes.
std::string unknownOpIn(const std::string& cause)
{
    const std::string marker = "Unknown builtin op: ";
    const size_t at = cause.find(marker);
    if (at == std::string::npos)
        return {};
    std::string op = cause.substr(at + marker.size());
    op = op.substr(0, op.find_first_of(" \n"));
    while (!op.empty() && (op.back() == '.' || op.back() == ','))
        op.pop_back();
    return op;
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
        if (m_batch.inputs.empty())
            return Error{m_options.batch + ": the batch holds its inputs by name (a dict: the model's keyword "
                                           "arguments), which a TorchScript forward does not take; an exported "
                                           "program (.pt2) or an eager replay takes them"};
        result.step = m_batch.step;
        result.lossName = m_batch.lossName.empty() ? m_options.lossName : m_batch.lossName;
        m_device = torch::Device(m_options.device == "cuda" ? torch::kCUDA : torch::kCPU);
        if (m_device.is_cuda() && !torch::cuda::is_available())
            return Error{"--device cuda: this LibTorch build has no CUDA, or no GPU is visible"};
        m_dtype = torchdtype::floatTypeNamed(m_options.dtype);

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
            return Error{unloadable(causeLine(e.what_without_backtrace()))};
        } catch (const std::exception& e) { // TorchScript's compiler reports with its own type (ErrorReport)
            return Error{unloadable(causeLine(e.what()))};
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
            result.badSampleCriterion = badSampleCriterionText(m_options.blowupBaseline);
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
            inputs += (inputs.empty() ? "" : ", ") + torchdtype::describe(input);
        std::string expected;
        for (const auto& parameter : m_module.named_parameters(/*recurse=*/true)) {
            expected = "; the model's first parameter " + parameter.name + " is " + torchdtype::describe(parameter.value);
            break;
        }
        return m_options.batch + ": the model's forward failed on this batch, which holds " +
               (m_batch.inputs.size() == 1 ? "input " : "inputs ") + inputs + expected + ": " + cause;
    }

    // Why the checkpoint did not load: an op this LibTorch lacks is named with the version that lacks it.
    std::string unloadable(const std::string& cause) const
    {
        if (const std::string op = unknownOpIn(cause); !op.empty())
            return m_options.checkpoint + ": the model calls " + op + ", an op LibTorch " + libtorchVersion() +
                   " (the one nanscope-torch replays with) does not have: it was saved by a newer torch, or uses an "
                   "extension's ops. Replay it with a nanscope built against that torch (README: build against your "
                   "own LibTorch), or save state_dict checkpoints for the eager replay";
        return m_options.checkpoint + ": not a TorchScript archive that can replay (" + cause +
               "); a state_dict gives tensor statistics only";
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
    // one argument more than the batch has inputs (a model that computes its loss in forward). The
    // arguments after those that forward declares with a default (Hugging Face's
    // `labels: Optional[Tensor] = None`, an optional attention mask) get their defaults.
    Status chooseForwardInputs(size_t expectedInputs)
    {
        m_forwardInputs = m_batch.inputs;
        m_forwardDefaults.clear();
        m_targetsInForward = false;
        const auto& arguments = m_module.get_method("forward").function().getSchema().arguments();
        // Defaults for the arguments after the first `given` (the schema's argument 0 is self).
        auto defaultsAfter = [&](size_t given, std::vector<c10::IValue>& defaults) {
            if (given > expectedInputs)
                return false;
            for (size_t i = given + 1; i <= expectedInputs && i < arguments.size(); ++i) {
                if (!arguments[i].default_value())
                    return false;
                defaults.push_back(*arguments[i].default_value());
            }
            return true;
        };
        const size_t inputs = m_batch.inputs.size();
        std::vector<c10::IValue> defaults;
        if (inputs == expectedInputs)
            return Status::success();
        if (m_batch.targets.defined() && defaultsAfter(inputs + 1, defaults)) {
            torch::Tensor targets = m_batch.targets;
            if (targets.is_floating_point())
                targets = targets.to(m_dtype);
            m_forwardInputs.push_back(targets);
            m_forwardDefaults = std::move(defaults);
            m_targetsInForward = true;
            return Status::success();
        }
        defaults.clear();
        if (defaultsAfter(inputs, defaults)) {
            m_forwardDefaults = std::move(defaults);
            return Status::success();
        }
        return Error{m_options.batch + ": the batch has " + std::to_string(inputs) + " input tensor(s)" +
                     (m_batch.targets.defined() ? " and targets" : "") + " but the model's " + forwardCall() + " takes " +
                     std::to_string(expectedInputs)};
    }

    // Which loss to back-propagate from. A loss forward returned wins: the model computed it as it
    // trained. Else the named loss of forward's output (left in `output`) and the batch's targets.
    // Sets the result's loss convention and says in its notes why backward will be skipped.
    Status chooseLoss(const c10::IValue& returned, const ReturnedLoss& inForward, torch::Tensor& output,
                      ReplayResult& result)
    {
        if (inForward.loss.defined() || m_targetsInForward) {
            result.lossConvention = LossConvention::InForward;
            result.lossName.clear();
            result.lossFrom = forwardCall() + inForward.access;
            if (!inForward.loss.defined())
                result.notes.push_back("the model's " + forwardCall() + " takes the targets but returned " +
                                       describeReturn(returned) +
                                       ", not a loss (a scalar tensor, or a dict or tuple with a 'loss' entry): backward skipped");
            else if (inForward.loss.dim() != 0)
                result.notes.push_back("the loss " + result.lossFrom + " is " + torchdtype::describe(inForward.loss) +
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

        return Status::success();
    }

    // Output-logit divergence, on the logits the loss reads.
    void measureLogits(const ProbedOps& probed, const std::vector<ReplayOp>& allOps, const ReturnedLoss& inForward,
                       const torch::Tensor& output, ReplayResult& result)
    {
        auto opIndexOf = [&](const torch::Tensor& tensor) { return probed.indexOf(tensor); };
        if (result.lossConvention == LossConvention::NamedLoss && (result.lossName == "cross_entropy" || result.lossName == "nll") &&
            output.is_floating_point())
            result.logits = logZOf(output, output.dim() >= 2 ? 1 : 0, "forward's output", opIndexOf(output));
        else if (result.lossConvention == LossConvention::InForward) {
            if (inForward.logits.defined() && inForward.logits.is_floating_point())
                result.logits = logZOf(inForward.logits, inForward.logits.dim() - 1, "forward's output" + inForward.logitsAccess,
                                       opIndexOf(inForward.logits));
            else if (probed.lastLogits.defined())
                result.logits = logZOf(probed.lastLogits, probed.lastLogitsDim,
                                       "the input of " + allOps[probed.lastLogitsOp].op + " (op #" +
                                           std::to_string(probed.lastLogitsOp) + ")",
                                       opIndexOf(probed.lastLogits));
        }

    }

    // The loss, and backward from it: every op's gradient statistics, the first non-finite
    // gradient, the op whose backward made one, and the parameters' figures.
    Status lossAndBackward(ProbedOps& probed, std::vector<ReplayOp>& allOps, const ReturnedLoss& inForward,
                           const torch::Tensor& output, ReplayResult& result)
    {
        auto opIndexOf = [&](const torch::Tensor& tensor) { return probed.indexOf(tensor); };
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
                allOps[i].grad = probed.gradients.of(probed.values[i]);
            result.firstNonfiniteGrad = firstNonfiniteGradient(allOps);
            // A finite forward whose backward is not: the op whose backward made the first
            // non-finite gradient out of a finite one (log of a zero that a torch.where masked out).
            if (!result.firstNonfinite)
                result.gradCulprit = probed.gradientCulprit();
            for (const auto& p : m_module.named_parameters(true))
                result.params.push_back({p.name, probed.statsOnce(p.value), probed.gradients.ofLeaf(p.value)});
        }
        return Status::success();
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
        stack.insert(stack.end(), m_forwardDefaults.begin(), m_forwardDefaults.end());
        ProbedOps probed;
        ScriptProbes probes(probed, probedOps, dataValues, m_modulePaths);
        ProbeRecording recording(
            [&](int64_t id, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs) {
                probes.record(id, inputs, outputs);
            });
        if (autocastDtype())
            result.notes.push_back("replayed under " + m_options.ampDtype + " autocast, as the run trained (amp_dtype); "
                                   "--dtype float32 replays without it");
        try {
            ReplayAutocast autocast(m_device.type(), autocastDtype());
            executor.run(stack);
        } catch (const c10::Error& e) {
            std::string hint;
            if (m_dtype == torch::kHalf && !m_device.is_cuda())
                hint = " (LibTorch has no float16 kernels for some CPU ops: use --dtype bfloat16 on CPU, or --device cuda)";
            return Error{forwardFailure(causeLine(e.what_without_backtrace())) + hint};
        } catch (const std::exception& e) {
            return Error{forwardFailure(causeLine(e.what()))};
        }
        if (!probed.failure().empty())
            return Error{"the statistics of an op's tensors could not be taken (" + causeLine(probed.failure()) + ")"};
        std::vector<ReplayOp>& allOps = probed.ops;
        if (stack.size() != originalOutputs)
            return Error{"internal: the instrumented forward returned " + std::to_string(stack.size()) + " values"};
        const c10::IValue returned = stack[0];

        const ReturnedLoss inForward = lossInOutput(returned, m_returnType);
        torch::Tensor output; // forward's output under a named loss
        if (Status chosen = chooseLoss(returned, inForward, output, result); !chosen)
            return chosen;
        result.firstNonfinite = forwardCulprit(allOps, result.notes);
        measureLogits(probed, allOps, inForward, output, result);
        if (Status backward = lossAndBackward(probed, allOps, inForward, output, result); !backward)
            return backward;
        if (result.firstNonfinite)
            result.firstNonfinite->grad = allOps[size_t(result.firstNonfinite->index)].grad;
        if (result.lossOp)
            result.lossOp->grad = allOps[size_t(result.lossOp->index)].grad;
        result.findings = judgeReplaySignatures(allOps, result.lossOp);

        result.ops = opsWithinLayer(std::move(allOps), m_options.layerPrefix,
                                    result.firstNonfinite ? result.firstNonfinite->index : -1);
        return Status::success();
    }

    // The run's autocast, unless --dtype chose a precision of its own.
    std::optional<c10::ScalarType> autocastDtype() const
    {
        return m_options.dtypeChosen ? std::nullopt : autocastDtypeNamed(m_options.ampDtype);
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
        inputs.insert(inputs.end(), m_forwardDefaults.begin(), m_forwardDefaults.end());
        try {
            ReplayAutocast autocast(m_device.type(), autocastDtype());
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
            const double lossValue = loss.item<double>();
            if (!std::isfinite(lossValue) || lossBlewUp(lossValue, m_options.blowupBaseline))
                return true;
            if (!m_options.backward || !loss.requires_grad())
                return false;
            std::vector<torch::Tensor> parameters;
            for (const auto& p : m_module.parameters(true))
                if (p.requires_grad())
                    parameters.push_back(p);
            if (parameters.empty())
                return false;
            return gradientsBad(torch::autograd::grad({loss}, parameters, {}, false, false, /*allow_unused=*/true),
                                m_options.blowupBaseline);
        } catch (const std::exception&) {
            return true; // a subset the model cannot run counts against it; the caller pads subsets
        }
        return false;
    }

    // The samples that make the replay non-finite (core/replay/SampleBisection).
    std::vector<int64_t> findBadSamples(std::vector<std::string>& notes)
    {
        const auto bad = [this](const std::vector<int64_t>& samples) { return isBad(samples); };
        return bisectBadSamples(m_batch.inputs.front().size(0), bad, notes);
    }

    ReplayOptions m_options;
    ProgressCallback m_progress;
    Batch m_batch;
    torch::jit::Module m_module;
    torch::Device m_device = torch::kCPU;
    c10::ScalarType m_dtype = torch::kFloat;
    std::set<std::string> m_modulePaths; // named_modules() of the checkpoint
    std::vector<torch::Tensor> m_forwardInputs; // the batch's inputs, and its targets when forward takes them
    std::vector<c10::IValue> m_forwardDefaults; // then the defaults of forward's remaining arguments
    bool m_targetsInForward = false;
    c10::TypePtr m_returnType;                   // of forward, for reading a loss out of what it returns
    LossConvention m_convention = LossConvention::None;
    std::string m_lossName;
};

} // namespace

namespace {
Result<ReplayResult> replayWithEitherEngine(const ReplayOptions& options, const ProgressCallback& progress)
{
    // A torch.export archive is data: its graph runs op by op, and no code of the file runs.
    if (isExportArchive(options.checkpoint))
        return replayExportedStep(options, progress);
    try {
        Replayer replayer(options, progress);
        return replayer.run();
    } catch (const c10::Error& e) {
        return Error{std::string("replay failed: ") + e.what_without_backtrace()};
    } catch (const std::exception& e) {
        return Error{std::string("replay failed: ") + e.what()};
    }
}
} // namespace

Result<ReplayResult> replayStep(const ReplayOptions& options, const ProgressCallback& progress)
{
    Result<ReplayResult> replayed = replayWithEitherEngine(options, progress);
    if (replayed)
        nameTheStateTheCulpritRead(*replayed);
    return replayed;
}

} // namespace nanscope
