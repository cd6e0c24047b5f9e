#include "core/torch/ProbedOps.h"

#include "core/torch/GraphProbes.h"
#include "core/torch/GraphProvenance.h"
#include "core/torch/SoftmaxMeasures.h"
#include "core/torch/TensorRange.h"

#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace nanscope::replaytorch {

namespace {

std::optional<TensorStats> statsOf(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    return torchutil::tensorStats(tensor);
}

// Ops whose output holds exactly the elements of their first input, rearranged (a view, a reshape,
// a transpose, a copy): its statistics are the input's, already taken, without a pass (nor, for a
// strided view, the contiguous copy the kernel would need first).
bool rearrangesItsInput(const std::string& op)
{
    static const std::set<std::string> ops = {
        "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::transpose", "aten::permute", "aten::t",
        "aten::unsqueeze", "aten::squeeze", "aten::flatten", "aten::unflatten", "aten::contiguous", "aten::clone",
        "aten::alias", "aten::detach", "aten::view_as", "aten::reshape_as", "aten::movedim", "aten::swapaxes",
        "aten::numpy_T", "aten::lift_fresh_copy"};
    return ops.count(op) > 0;
}

} // namespace

int64_t classDimOf(const OpSite& site, const torch::Tensor& input)
{
    if (input.dim() == 0)
        return 0;
    const bool softmax = site.role == OpSite::Role::Softmax || site.role == OpSite::Role::LogSoftmax;
    if (softmax && site.dim && *site.dim >= -input.dim() && *site.dim < input.dim())
        return *site.dim < 0 ? *site.dim + input.dim() : *site.dim;
    if (site.role == OpSite::Role::CrossEntropy && input.dim() >= 2)
        return 1;
    return input.dim() - 1;
}

std::optional<TensorStats> ProbedOps::cachedStats(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    auto it = m_statsCache.find(tensor.unsafeGetTensorImpl());
    if (it == m_statsCache.end())
        it = m_statsCache.emplace(tensor.unsafeGetTensorImpl(), statsOf(tensor)).first;
    return it->second;
}

void ProbedOps::record(const OpSite& site, const std::vector<torch::Tensor>& opInputs, const std::vector<torch::Tensor>& outputs)
{
    if (outputs.empty() || !m_failure.empty())
        return;
    try {
        const torch::Tensor& output = outputs.front();
        ReplayOp op;
        op.index = int(ops.size());
        op.op = site.op;
        op.module = site.module;
        op.source = site.source;
        op.code = site.code;
        op.iteration = site.iteration;
        op.fromData = site.fromData;
        std::vector<SeenTensor> seenInputs;
        for (const torch::Tensor& input : opInputs) {
            op.inputs.push_back(cachedStats(input));
            seenInputs.push_back(see(input));
        }
        // Always taken afresh, after the inputs were read from the cache (an in-place op's output
        // is its input, changed), unless the op only rearranged its input's elements.
        const bool sameElements = rearrangesItsInput(site.op) && !opInputs.empty() && opInputs.front().defined() &&
                                  output.defined() && !op.inputs.empty() && op.inputs.front() &&
                                  output.unsafeGetTensorImpl() != opInputs.front().unsafeGetTensorImpl() &&
                                  output.numel() == opInputs.front().numel() &&
                                  output.scalar_type() == opInputs.front().scalar_type() && output.is_floating_point();
        if (sameElements) {
            op.output = op.inputs.front();
            op.output->shape = output.sizes().vec();
        } else {
            op.output = statsOf(output);
        }
        if (output.defined())
            m_statsCache[output.unsafeGetTensorImpl()] = op.output;
        op.headroom = precisionHeadroomOf(op.output);
        if (output.defined())
            if (auto fn = output.grad_fn())
                op.gradFunction = fn->name();
        const bool softmax = site.role == OpSite::Role::Softmax || site.role == OpSite::Role::LogSoftmax;
        if (softmax && !op.inputs.empty() && op.inputs.front() && output.defined() && output.dim() > 0) {
            SoftmaxSignature signature;
            signature.inputAbsmax = op.inputs.front()->absmax;
            const int64_t dim = classDimOf(site, output);
            signature.entropy = meanRowEntropy(output, dim, site.role == OpSite::Role::LogSoftmax);
            signature.uniformEntropy = std::log(double(output.size(dim)));
            op.softmax = signature;
        }
        if ((softmax || site.role == OpSite::Role::CrossEntropy) && !opInputs.empty() && opInputs.front().defined() &&
            opInputs.front().is_floating_point()) {
            lastLogits = opInputs.front();
            lastLogitsOp = ops.size();
            lastLogitsDim = classDimOf(site, lastLogits);
        }
        SeenTensor seenOutput = see(output);
        gradients.watch(seenOutput);
        ops.push_back(std::move(op));
        inputs.push_back(std::move(seenInputs));
        values.push_back(std::move(seenOutput));
    } catch (const std::exception& e) {
        m_failure = site.op + ": " + e.what();
    }
}

int ProbedOps::indexOf(const torch::Tensor& tensor) const
{
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i].is(tensor))
            return int(i);
    return -1;
}

std::optional<ReplayOp> ProbedOps::gradientCulprit() const
{
    for (size_t i = ops.size(); i-- > 0;) {
        if (!ops[i].grad || hasNonfinite(ops[i].grad))
            continue;
        const bool madeNonfinite = std::any_of(inputs[i].begin(), inputs[i].end(), [&](const SeenTensor& t) {
            const std::optional<TensorStats> grad = gradients.of(t);
            return grad && grad->nonfinite() > 0;
        });
        if (madeNonfinite)
            return ops[i];
    }
    return std::nullopt;
}

ScriptProbes::ScriptProbes(ProbedOps& ops, const std::vector<torch::jit::Node*>& probedOps,
                           const std::set<const torch::jit::Value*>& dataValues, const std::set<std::string>& modulePaths)
    : m_ops(ops), m_probedOps(probedOps), m_dataValues(dataValues), m_modulePaths(modulePaths)
{
}

void ScriptProbes::record(int64_t id, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs)
{
    if (id < 0 || size_t(id) >= m_probedOps.size() || outputs.empty() || !m_ops.failure().empty())
        return;
    const torch::jit::Node* node = m_probedOps[size_t(id)];
    const int iteration = m_executions[id]++;
    OpSite site;
    site.op = node->kind().toQualString();
    site.module = modulePathOf(node, m_modulePaths);
    site.source = sourceOf(node);
    site.code = codeOf(node);
    if (insideLoop(node))
        site.iteration = iteration;
    site.fromData = std::any_of(node->outputs().begin(), node->outputs().end(),
                                [&](const torch::jit::Value* v) { return m_dataValues.count(v) > 0; });
    if (isLogSoftmax(node))
        site.role = OpSite::Role::LogSoftmax;
    else if (isSoftmax(node))
        site.role = OpSite::Role::Softmax;
    else if (node->kind() == c10::aten::cross_entropy_loss)
        site.role = OpSite::Role::CrossEntropy;
    if (site.role == OpSite::Role::Softmax || site.role == OpSite::Role::LogSoftmax)
        if (node->inputs().size() > 1)
            if (auto dim = torch::jit::toIValue(node->input(1)); dim && dim->isInt())
                site.dim = dim->toInt();
    m_ops.record(site, inputs, outputs);
}

} // namespace nanscope::replaytorch
