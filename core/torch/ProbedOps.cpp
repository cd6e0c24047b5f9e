#include "core/torch/ProbedOps.h"

#include "core/torch/GraphProbes.h"
#include "core/torch/GraphProvenance.h"
#include "core/torch/SoftmaxMeasures.h"
#include "core/torch/TensorRange.h"

#include <algorithm>
#include <cmath>

namespace nanscope::replaytorch {

namespace {

std::optional<TensorStats> statsOf(const torch::Tensor& tensor)
{
    if (!tensor.defined())
        return std::nullopt;
    return torchutil::tensorStats(tensor);
}

} // namespace

ProbedOps::ProbedOps(const std::vector<torch::jit::Node*>& probedOps, const std::set<const torch::jit::Value*>& dataValues,
                     const std::set<std::string>& modulePaths)
    : m_probedOps(probedOps), m_dataValues(dataValues), m_modulePaths(modulePaths)
{
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

void ProbedOps::record(int64_t id, const std::vector<torch::Tensor>& opInputs, const std::vector<torch::Tensor>& outputs)
{
    if (id < 0 || size_t(id) >= m_probedOps.size() || outputs.empty() || !m_failure.empty())
        return;
    const torch::jit::Node* node = m_probedOps[size_t(id)];
    try {
        const int iteration = m_executions[id]++;
        const torch::Tensor& output = outputs.front();
        ReplayOp op;
        op.index = int(ops.size());
        op.op = node->kind().toQualString();
        op.module = modulePathOf(node, m_modulePaths);
        op.source = sourceOf(node);
        op.code = codeOf(node);
        if (insideLoop(node))
            op.iteration = iteration;
        op.fromData = std::any_of(node->outputs().begin(), node->outputs().end(),
                                  [&](const torch::jit::Value* v) { return m_dataValues.count(v) > 0; });
        std::vector<SeenTensor> seenInputs;
        for (const torch::Tensor& input : opInputs) {
            op.inputs.push_back(cachedStats(input));
            seenInputs.push_back(see(input));
        }
        // Always taken afresh, after the inputs were read from the cache: an in-place op's output
        // is its input, changed.
        op.output = statsOf(output);
        if (output.defined())
            m_statsCache[output.unsafeGetTensorImpl()] = op.output;
        op.headroom = precisionHeadroomOf(op.output);
        if (auto fn = output.grad_fn())
            op.gradFunction = fn->name();
        if (isSoftmax(node) && !op.inputs.empty() && op.inputs.front() && output.dim() > 0) {
            SoftmaxSignature softmax;
            softmax.inputAbsmax = op.inputs.front()->absmax;
            const int64_t dim = classDimOf(node, output);
            softmax.entropy = meanRowEntropy(output, dim, isLogSoftmax(node));
            softmax.uniformEntropy = std::log(double(output.size(dim)));
            op.softmax = softmax;
        }
        if ((isSoftmax(node) || node->kind() == c10::aten::cross_entropy_loss) && !opInputs.empty() &&
            opInputs.front().defined() && opInputs.front().is_floating_point()) {
            lastLogits = opInputs.front();
            lastLogitsOp = ops.size();
        }
        SeenTensor seenOutput = see(output);
        gradients.watch(seenOutput);
        ops.push_back(std::move(op));
        nodes.push_back(node);
        inputs.push_back(std::move(seenInputs));
        values.push_back(std::move(seenOutput));
    } catch (const std::exception& e) {
        m_failure = std::string(node->kind().toQualString()) + ": " + e.what();
    }
}

int ProbedOps::indexOf(const torch::Tensor& tensor) const
{
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i].is(tensor))
            return int(i);
    return -1;
}

} // namespace nanscope::replaytorch
