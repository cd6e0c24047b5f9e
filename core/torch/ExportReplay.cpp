#include "core/torch/ExportReplay.h"

#include "core/checkpoint/ExportedProgram.h"
#include "core/checkpoint/ZipArchive.h"
#include "core/replay/ReplayJudgement.h"
#include "core/replay/SampleBisection.h"
#include "core/replay/ReplaySignatures.h"
#include "core/torch/ExportInterpreter.h"
#include "core/torch/ProbedOps.h"
#include "core/torch/ReplayAutocast.h"
#include "core/torch/ReplayBatch.h"
#include "core/torch/ReplayOutputs.h"
#include "core/torch/SoftmaxMeasures.h"
#include "core/torch/TensorRange.h"
#include "core/torch/TorchDType.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace nanscope {

namespace {

using namespace replaytorch;

std::optional<TensorStats> statsOf(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    return torchutil::tensorStats(tensor);
}

// LibTorch's messages run over many lines; the first says what went wrong.
std::string firstLine(const std::string& message)
{
    return message.substr(0, message.find('\n'));
}

class ExportReplayer
{
public:
    ExportReplayer(const ReplayOptions& options, const ProgressCallback& progress)
        : m_options(options), m_progress(progress)
    {
    }

    // Reads the archive and the batch, makes the weights, resolves every op.
    Status load()
    {
        auto batch = readBatch(m_options.batch);
        if (!batch)
            return Error{batch.error()};
        m_batch = std::move(*batch);
        m_device = torch::Device(m_options.device == "cuda" ? torch::kCUDA : torch::kCPU);
        if (m_device.is_cuda() && !torch::cuda::is_available())
            return Error{"--device cuda: this LibTorch build has no CUDA, or no GPU is visible"};
        m_dtype = torchdtype::floatTypeNamed(m_options.dtype);
        auto program = readExportedProgram(m_options.checkpoint);
        if (!program)
            return Error{program.error()};
        m_program = std::make_unique<ExportedProgram>(std::move(*program));
        // Under --dtype the archive's dtype checks (_assert_tensor_metadata) would refuse the what-if.
        m_interpreter = std::make_unique<ExportInterpreter>(*m_program, m_device, /*checkMetadata=*/!m_options.dtypeChosen);
        if (Status resolved = m_interpreter->resolveOps(); !resolved)
            return resolved;
        if (Status tensors = loadTensors(); !tensors)
            return tensors;
        return chooseInputs();
    }

    Result<ReplayResult> run()
    {
        ReplayResult result;
        if (!reportProgress(m_progress, 0.05, "loading the exported program"))
            return Error{"cancelled"};
        if (Status loaded = load(); !loaded)
            return Error{loaded.error()};
        result.step = m_batch.step;
        result.lossName = m_batch.lossName.empty() ? m_options.lossName : m_batch.lossName;
        if (!m_options.dtypeChosen)
            result.dtype = mostCommonParameterDtype();
        if (autocastDtype())
            result.notes.push_back("replayed under " + m_options.ampDtype + " autocast, as the run trained (amp_dtype); "
                                   "--dtype float32 replays without it");
        if (m_options.eval)
            result.notes.push_back("--eval: an exported program keeps the mode it was exported in (its batch norm and "
                                   "dropout calls say training or not); it replays as exported");
        if (!reportProgress(m_progress, 0.15, "instrumented forward"))
            return Error{"cancelled"};
        const auto started = std::chrono::steady_clock::now();
        if (Status status = instrumentedStep(result); !status)
            return Error{status.error()};
        result.instrumentedMs =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
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

    // Forward, loss and backward with nothing measured, `repeats` times after a warm-up.
    Result<double> timePlain(int repeats)
    {
        if (Status loaded = load(); !loaded)
            return Error{loaded.error()};
        ReplayResult probe;
        probe.lossName = m_batch.lossName.empty() ? m_options.lossName : m_batch.lossName;
        double total = 0;
        for (int i = 0; i <= repeats; ++i) {
            const auto started = std::chrono::steady_clock::now();
            std::vector<c10::IValue> outputs = forward(m_forwardInputs, {});
            torch::Tensor loss = lossOf(outputs, m_batch.targets, probe.lossName);
            if (loss.defined() && loss.requires_grad())
                loss.backward();
            for (auto& [name, parameter] : m_parameters)
                parameter.mutable_grad() = torch::Tensor();
            if (i > 0)
                total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        }
        return total / std::max(1, repeats);
    }

private:
    Status loadTensors()
    {
        auto zip = ZipArchive::open(m_program->path);
        if (!zip)
            return Error{zip.error()};
        auto make = [&](const ExportStoredTensor& stored) -> Result<torch::Tensor> {
            auto bytes = readStoredTensorBytes(*zip, *m_program, stored);
            if (!bytes)
                return Error{bytes.error()};
            const int64_t elements = int64_t(bytes->size() / dtypeSize(stored.dtype));
            torch::Tensor storage =
                torch::from_blob(bytes->data(), {elements}, torchdtype::scalarTypeOf(stored.dtype)).clone();
            torch::Tensor tensor = storage.as_strided(stored.sizes, stored.strides, stored.storageOffset).clone();
            // The archive's own dtypes unless --dtype asked for another (the precision what-if):
            // export recorded every cast and dtype check of the step as it ran.
            if (tensor.is_floating_point() && m_options.dtypeChosen)
                tensor = tensor.to(m_dtype);
            return tensor.to(m_device);
        };
        for (const ExportInputSpec& spec : m_program->inputSpecs) {
            using K = ExportInputSpec::Kind;
            if (spec.kind == K::Parameter || spec.kind == K::Buffer || spec.kind == K::TensorConstant) {
                const auto& table = spec.kind == K::Parameter || (spec.kind == K::Buffer && spec.persistent)
                                        ? m_program->weights
                                        : m_program->constants;
                auto found = table.find(spec.target);
                if (found == table.end()) {
                    // A non-persistent buffer is among the constants; a lifted constant may be among the weights.
                    const auto& other = &table == &m_program->weights ? m_program->constants : m_program->weights;
                    found = other.find(spec.target);
                    if (found == other.end())
                        return Error{m_program->path + ": the graph takes " + spec.target + " (" + spec.argName +
                                     "), but the archive stores no tensor of that name"};
                }
                auto tensor = make(found->second);
                if (!tensor)
                    return Error{tensor.error()};
                if (spec.kind == K::Parameter) {
                    if (tensor->is_floating_point())
                        tensor->requires_grad_(true);
                    m_parameters.emplace_back(spec.target, *tensor);
                    m_fixed[spec.argName] = *tensor;
                } else {
                    m_buffers[spec.argName] = *tensor; // copied for every run: batch norm writes its statistics
                }
            } else if (spec.kind == K::UserInput) {
                m_userInputs.push_back(spec.argName);
            } else if (spec.kind == K::ConstantInput) {
                m_constantInputs.push_back(&spec);
            } else if (spec.kind == K::Other) {
                return Error{m_program->path + ": the graph takes an input of kind " + spec.otherKind +
                             ", which nanscope does not replay"};
            }
        }
        for (const auto& output : m_program->outputSpecs)
            if (output.kind == ExportOutputSpec::Kind::UserOutput || output.kind == ExportOutputSpec::Kind::LossOutput)
                m_userOutputs.push_back(output.argName);
        return Status::success();
    }

    // The run's autocast, unless --dtype chose a precision of its own.
    std::optional<c10::ScalarType> autocastDtype() const
    {
        return m_options.dtypeChosen ? std::nullopt : autocastDtypeNamed(m_options.ampDtype);
    }

    // A module path as the user names it: without a wrapper's prefix (PEFT's "base_model.model.").
    std::string userPath(const std::string& path) const
    {
        const std::string& prefix = m_options.modulePathPrefix;
        if (prefix.empty())
            return path;
        if (path.rfind(prefix, 0) == 0)
            return path.substr(prefix.size());
        return prefix.rfind(path + ".", 0) == 0 ? std::string() : path; // the wrappers themselves: the root
    }

    OpSite userSite(OpSite site) const
    {
        site.module = userPath(site.module);
        return site;
    }

    // The dtype most parameters hold ("float16"), which the replay ran in; "" without parameters.
    std::string mostCommonParameterDtype() const
    {
        std::map<c10::ScalarType, size_t> counts;
        for (const auto& [name, parameter] : m_parameters)
            if (parameter.is_floating_point())
                ++counts[parameter.scalar_type()];
        if (counts.empty())
            return {};
        const auto most = std::max_element(counts.begin(), counts.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        return torchdtype::nameOf(most->first);
    }

    // "forward(input_ids, labels)": the exported forward's inputs, for saying where the loss came
    // from; "training_step(batch, 0)" when the program is a framework's step method (the batch's
    // "call"), as eager replay says it.
    std::string forwardCall() const
    {
        if (!m_batch.call.empty())
            return m_batch.call + "(batch, 0)";
        std::string names;
        for (const auto& name : m_userInputs)
            names += (names.empty() ? "" : ", ") + name;
        return "forward(" + names + ")";
    }

    // The batch's inputs, and its targets too when the exported forward takes one input more (a
    // model that computes its loss: Hugging Face's labels).
    Status chooseInputs()
    {
        // A floating-point input in the dtype the graph was exported with (the batch file may hold
        // float32 where the model ran in float16), or in --dtype's.
        auto prepared = [&](torch::Tensor input, const std::string& name) {
            input = input.to(m_device);
            if (!input.is_floating_point())
                return input;
            if (m_options.dtypeChosen)
                return input.to(m_dtype);
            auto meta = m_program->graph.tensorValues.find(name);
            if (meta != m_program->graph.tensorValues.end())
                if (auto dtype = dtypeOfExportScalarType(meta->second.scalarType); dtype && isFloatingPoint(*dtype))
                    return input.to(torchdtype::scalarTypeOf(*dtype));
            return input;
        };
        m_forwardInputs.clear();
        if (m_batch.targets.defined())
            m_batch.targets = m_batch.targets.to(m_device);
        // A batch by name (a Hugging Face batch): each of forward's inputs by its own name.
        if (!m_batch.namedInputs.empty()) {
            for (const auto& name : m_userInputs) {
                auto found = std::find_if(m_batch.namedInputs.begin(), m_batch.namedInputs.end(),
                                          [&](const auto& named) { return named.first == name; });
                if (found != m_batch.namedInputs.end())
                    m_forwardInputs.push_back(prepared(found->second, name));
                else if (m_batch.targets.defined() && &name == &m_userInputs.back() && !m_targetsInForward) {
                    m_forwardInputs.push_back(prepared(m_batch.targets, name));
                    m_targetsInForward = true;
                } else {
                    std::string held;
                    for (const auto& named : m_batch.namedInputs)
                        held += (held.empty() ? "" : ", ") + named.first;
                    return Error{m_options.batch + ": the exported " + forwardCall() + " takes " + name +
                                 ", which the batch (" + held + ") does not hold"};
                }
            }
            return Status::success();
        }
        for (size_t i = 0; i < m_batch.inputs.size(); ++i)
            m_forwardInputs.push_back(prepared(m_batch.inputs[i], i < m_userInputs.size() ? m_userInputs[i] : ""));
        if (m_forwardInputs.size() == m_userInputs.size())
            return Status::success();
        if (m_batch.targets.defined() && m_forwardInputs.size() + 1 == m_userInputs.size()) {
            m_forwardInputs.push_back(prepared(m_batch.targets, m_userInputs.back()));
            m_targetsInForward = true;
            return Status::success();
        }
        return Error{m_options.batch + ": the batch has " + std::to_string(m_batch.inputs.size()) + " input tensor(s)" +
                     (m_batch.targets.defined() ? " and targets" : "") + " but the exported " + forwardCall() + " takes " +
                     std::to_string(m_userInputs.size())};
    }

    // Runs the graph on these inputs; every op seen by `observe` when there is one. Returns the
    // user outputs in order.
    std::vector<c10::IValue> forward(const std::vector<torch::Tensor>& inputs, const ExportInterpreter::OpObserver& observe)
    {
        ExportValues values;
        for (const auto& [name, tensor] : m_fixed)
            values.set(name, tensor);
        for (const auto& [name, tensor] : m_buffers)
            values.set(name, tensor.clone());
        for (const ExportInputSpec* constant : m_constantInputs)
            if (constant->constantValue.kind == ExportArgument::Kind::Bool)
                values.set(constant->argName, c10::IValue(constant->constantValue.ints.front() != 0));
            else if (constant->constantValue.kind == ExportArgument::Kind::Int)
                values.set(constant->argName, c10::IValue(constant->constantValue.ints.front()));
            else if (constant->constantValue.kind == ExportArgument::Kind::Float)
                values.set(constant->argName, c10::IValue(constant->constantValue.floats.front()));
            else
                values.set(constant->argName, c10::IValue());
        std::set<std::string> data;
        for (size_t i = 0; i < inputs.size() && i < m_userInputs.size(); ++i) {
            values.set(m_userInputs[i], inputs[i]);
            data.insert(m_userInputs[i]);
        }
        ReplayAutocast autocast(m_device.type(), autocastDtype());
        m_interpreter->run(m_program->graph, values, data, observe);
        std::vector<c10::IValue> outputs;
        for (const auto& name : m_userOutputs) {
            const c10::IValue* value = values.find(name);
            outputs.push_back(value ? *value : c10::IValue());
        }
        return outputs;
    }

    // The loss a forward returned: its first scalar floating-point output. Empty when there is none.
    static int lossOutputIndex(const std::vector<c10::IValue>& outputs)
    {
        for (size_t i = 0; i < outputs.size(); ++i)
            if (outputs[i].isTensor() && outputs[i].toTensor().dim() == 0 && outputs[i].toTensor().is_floating_point())
                return int(i);
        return -1;
    }

    static torch::Tensor firstOutputTensor(const std::vector<c10::IValue>& outputs)
    {
        for (const auto& output : outputs)
            if (output.isTensor())
                return output.toTensor();
        return {};
    }

    torch::Tensor lossOf(const std::vector<c10::IValue>& outputs, const torch::Tensor& targets, const std::string& lossName)
    {
        if (const int index = lossOutputIndex(outputs); index >= 0)
            return outputs[size_t(index)].toTensor();
        const torch::Tensor output = firstOutputTensor(outputs);
        if (!m_targetsInForward && targets.defined() && !lossName.empty() && output.defined())
            return computeLoss(lossName, output, targets);
        return {};
    }

    Status instrumentedStep(ReplayResult& result)
    {
        ProbedOps probed;
        std::vector<c10::IValue> outputs;
        try {
            outputs = forward(m_forwardInputs, [&](const OpSite& site, const std::vector<torch::Tensor>& inputs,
                                                  const std::vector<torch::Tensor>& outs) {
                probed.record(userSite(site), inputs, outs);
            });
        } catch (const std::exception& e) {
            std::string inputs;
            for (size_t i = 0; i < m_forwardInputs.size(); ++i)
                inputs += (inputs.empty() ? "" : ", ") + (i < m_userInputs.size() ? m_userInputs[i] + " " : "") +
                          torchdtype::describe(m_forwardInputs[i]);
            std::string hint;
            if (m_dtype == torch::kHalf && !m_device.is_cuda())
                hint = " (LibTorch has no float16 kernels for some CPU ops: use --dtype bfloat16 on CPU, or --device cuda)";
            return Error{m_options.batch + ": the exported graph failed on this batch, which holds " +
                         (m_forwardInputs.size() == 1 ? "input " : "inputs ") + inputs + ": " + firstLine(e.what()) + hint};
        }
        if (!probed.failure().empty())
            return Error{"the statistics of an op's tensors could not be taken (" + firstLine(probed.failure()) + ")"};
        std::vector<ReplayOp>& allOps = probed.ops;
        auto opIndexOf = [&](const torch::Tensor& tensor) { return probed.indexOf(tensor); };

        torch::Tensor loss;
        torch::Tensor output;
        const int lossIndex = lossOutputIndex(outputs);
        if (lossIndex >= 0 || m_targetsInForward) {
            result.lossConvention = LossConvention::InForward;
            result.lossName.clear();
            if (lossIndex >= 0) {
                loss = outputs[size_t(lossIndex)].toTensor();
                // A step method's program returns its loss alone.
                result.lossFrom = forwardCall() + (m_batch.call.empty() ? "[" + std::to_string(lossIndex) + "]" : "");
                if (const int op = opIndexOf(loss); op >= 0)
                    result.lossOp = allOps[size_t(op)];
            } else {
                result.notes.push_back("the exported " + forwardCall() +
                                       " takes the targets but returned no scalar loss: backward skipped");
            }
        } else {
            output = firstOutputTensor(outputs);
            if (!output.defined())
                return Error{m_options.checkpoint + ": the exported forward returned no tensor to compute a loss of"};
            if (m_batch.targets.defined() && !result.lossName.empty()) {
                result.lossConvention = LossConvention::NamedLoss;
                result.lossFrom = result.lossName + "(output, targets)";
                try {
                    loss = computeLoss(result.lossName, output, m_batch.targets);
                } catch (const std::exception&) {
                    std::ostringstream shapes;
                    shapes << "the model's output " << output.sizes() << " does not fit the batch's targets "
                           << m_batch.targets.sizes() << " for the " << result.lossName << " loss";
                    return Error{m_options.batch + ": " + shapes.str()};
                }
            } else {
                result.notes.push_back(m_batch.targets.defined() ? "no loss name in the batch or the run: backward skipped"
                                                                 : "the batch has no targets: backward skipped");
            }
        }
        result.firstNonfinite = forwardCulprit(allOps, result.notes);

        // Output-logit divergence, on the logits the loss reads.
        if (result.lossConvention == LossConvention::NamedLoss && (result.lossName == "cross_entropy" || result.lossName == "nll") &&
            output.is_floating_point())
            result.logits = logZOf(output, output.dim() >= 2 ? 1 : 0, "forward's output", opIndexOf(output));
        else if (result.lossConvention == LossConvention::InForward && probed.lastLogits.defined())
            result.logits = logZOf(probed.lastLogits, probed.lastLogitsDim,
                                   "the input of " + allOps[probed.lastLogitsOp].op + " (op #" +
                                       std::to_string(probed.lastLogitsOp) + ")",
                                   opIndexOf(probed.lastLogits));

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
            if (!result.firstNonfinite)
                result.gradCulprit = probed.gradientCulprit();
            for (const auto& [name, parameter] : m_parameters)
                result.params.push_back({userPath(name), probed.statsOnce(parameter), probed.gradients.ofLeaf(parameter)});
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
    // non-finite value (as the TorchScript replay judges a subset).
    bool isBad(const std::vector<int64_t>& samples)
    {
        const int64_t n = m_forwardInputs.front().size(0);
        const auto index = torch::tensor(samples, torch::kLong).to(m_device);
        std::vector<torch::Tensor> inputs;
        for (const auto& input : m_forwardInputs)
            inputs.push_back(input.dim() > 0 && input.size(0) == n ? input.index_select(0, index) : input);
        try {
            const std::vector<c10::IValue> outputs = forward(inputs, {});
            for (const auto& output : outputs)
                if (output.isTensor() && output.toTensor().is_floating_point() &&
                    !torch::isfinite(output.toTensor()).all().item<bool>())
                    return true;
            const torch::Tensor targets = m_batch.targets.defined() && !m_targetsInForward && m_batch.targets.dim() > 0 &&
                                                  m_batch.targets.size(0) == n
                                              ? m_batch.targets.index_select(0, index)
                                              : m_batch.targets;
            const torch::Tensor loss = lossOf(outputs, targets, m_lossName);
            if (!loss.defined() || loss.dim() != 0)
                return false;
            const double lossValue = loss.item<double>();
            if (!std::isfinite(lossValue) || lossBlewUp(lossValue, m_options.blowupBaseline))
                return true;
            if (!m_options.backward || !loss.requires_grad())
                return false;
            std::vector<torch::Tensor> parameters;
            for (const auto& [name, parameter] : m_parameters)
                if (parameter.requires_grad())
                    parameters.push_back(parameter);
            if (parameters.empty())
                return false;
            return gradientsBad(torch::autograd::grad({loss}, parameters, {}, false, false, /*allow_unused=*/true),
                                m_options.blowupBaseline);
        } catch (const std::exception&) {
            return true; // a subset the graph cannot run counts against it; the caller pads subsets
        }
        return false;
    }

    // The samples that make the replay non-finite (core/replay/SampleBisection).
    std::vector<int64_t> findBadSamples(std::vector<std::string>& notes)
    {
        const int64_t n = m_forwardInputs.front().dim() > 0 ? m_forwardInputs.front().size(0) : 1;
        const auto bad = [this](const std::vector<int64_t>& samples) { return isBad(samples); };
        return bisectBadSamples(n, bad, notes);
    }

    ReplayOptions m_options;
    ProgressCallback m_progress;
    Batch m_batch;
    torch::Device m_device = torch::kCPU;
    c10::ScalarType m_dtype = torch::kFloat;
    std::unique_ptr<ExportedProgram> m_program;
    std::unique_ptr<ExportInterpreter> m_interpreter;
    std::vector<std::pair<std::string, torch::Tensor>> m_parameters; // by module name, in the signature's order
    std::map<std::string, torch::Tensor> m_fixed;   // parameters and constants, by placeholder
    std::map<std::string, torch::Tensor> m_buffers; // by placeholder
    std::vector<std::string> m_userInputs, m_userOutputs;
    std::vector<const ExportInputSpec*> m_constantInputs;
    std::vector<torch::Tensor> m_forwardInputs;
    bool m_targetsInForward = false;
    LossConvention m_convention = LossConvention::None;
    std::string m_lossName;
};

} // namespace

Result<ReplayResult> replayExportedStep(const ReplayOptions& options, const ProgressCallback& progress)
{
    try {
        ExportReplayer replayer(options, progress);
        return replayer.run();
    } catch (const c10::Error& e) {
        return Error{std::string("replay failed: ") + firstLine(e.what_without_backtrace())};
    } catch (const std::exception& e) {
        return Error{std::string("replay failed: ") + firstLine(e.what())};
    }
}

Result<double> timePlainExportedStep(const ReplayOptions& options, int repeats)
{
    try {
        ExportReplayer replayer(options, {});
        return replayer.timePlain(repeats);
    } catch (const std::exception& e) {
        return Error{std::string("plain run failed: ") + firstLine(e.what())};
    }
}

} // namespace nanscope
