// The higher-order ops of an exported graph: torch.cond runs the branch its predicate takes,
// wrap_with_set_grad_enabled runs its subgraph under that grad mode, map_impl runs its function over
// the first dimension of its tensors and stacks the results. Each binds the subgraph's outputs to
// the node's and marks them data when any operand that reached them was.
#include "core/torch/ExportInterpreter.h"

#include "core/torch/ExportNodeValues.h"

#include <stdexcept>

namespace nanscope::replaytorch {

using exportnode::asInt;
using exportnode::fail;
using exportnode::namesRead;
using exportnode::namesWritten;

// One higher-order node as it runs: the node, the values and data names of its scope, and what its
// subgraphs need to run.
struct ExportInterpreter::HigherOrderCall
{
    const ExportInterpreter& interpreter;
    const ExportNode& node;
    ExportValues& values;
    std::set<std::string>& dataNames;
    const OpObserver& observe;
    int iteration;
    std::vector<std::string> written; // the node's output names

    // The subgraph's outputs, bound to the node's outputs in order (or the stacked results of a map).
    void bindOutputs(const ExportGraph& body, const ExportValues& inner, const std::vector<c10::IValue>* stacked) const
    {
        std::vector<std::string> names;
        for (const auto& output : node.outputs)
            namesWritten(output, names);
        for (size_t i = 0; i < names.size(); ++i) {
            if (stacked) {
                values.set(names[i], (*stacked)[i]);
                continue;
            }
            if (i >= body.outputs.size() || body.outputs[i].names.empty())
                fail(node, "its subgraph returns fewer values than the node lists");
            const c10::IValue* v = inner.find(body.outputs[i].names.front());
            if (!v)
                fail(node, "its subgraph does not compute " + body.outputs[i].names.front());
            values.set(names[i], *v);
        }
    }

    // Runs a subgraph on `operands`; whether any of its outputs is computed from the batch.
    bool runBody(const ExportGraph& body, const std::vector<c10::IValue>& operands, ExportValues& inner,
                 const std::vector<bool>& operandFromData, int bodyIteration) const
    {
        std::vector<std::string> placeholders;
        for (const auto& input : body.inputs)
            namesWritten(input, placeholders);
        if (placeholders.size() != operands.size())
            fail(node, "its subgraph takes " + std::to_string(placeholders.size()) + " inputs, the node passes " +
                           std::to_string(operands.size()));
        std::set<std::string> innerData = dataNames;
        for (size_t i = 0; i < operands.size(); ++i) {
            inner.set(placeholders[i], operands[i]);
            if (operandFromData[i])
                innerData.insert(placeholders[i]);
            else
                innerData.erase(placeholders[i]);
        }
        interpreter.run(body, inner, innerData, observe, bodyIteration);
        bool anyData = false;
        for (const auto& output : body.outputs)
            for (const auto& name : output.names)
                anyData = anyData || innerData.count(name) > 0;
        return anyData;
    }

    // The node's arguments from `from` on, flattened into operands, with whether each is data.
    void operandsOf(size_t from, std::vector<c10::IValue>& operands, std::vector<bool>& fromData) const
    {
        for (size_t i = from; i < node.inputs.size(); ++i) {
            const ExportArgument& arg = node.inputs[i].arg;
            if (arg.kind == ExportArgument::Kind::Tensors) {
                for (const auto& name : arg.names) {
                    operands.push_back(interpreter.valueOf(ExportArgument{ExportArgument::Kind::Tensor, {name}}, values, nullptr));
                    fromData.push_back(dataNames.count(name) > 0);
                }
            } else {
                operands.push_back(interpreter.valueOf(arg, values, nullptr));
                std::vector<std::string> read;
                namesRead(arg, read);
                fromData.push_back(!read.empty() && dataNames.count(read.front()) > 0);
            }
        }
    }

    const ExportGraph& graphAt(size_t index) const
    {
        if (index >= node.inputs.size() || node.inputs[index].arg.kind != ExportArgument::Kind::Graph ||
            !node.inputs[index].arg.graph)
            fail(node, "has no subgraph as its argument " + std::to_string(index));
        return *node.inputs[index].arg.graph;
    }

    void markData(bool anyData)
    {
        if (anyData)
            dataNames.insert(written.begin(), written.end());
    }

    void runCond();
    void runWithGradMode();
    void runMap();
};

void ExportInterpreter::HigherOrderCall::runCond()
{
    // cond(pred, true_graph, false_graph, operands)
    if (node.inputs.size() < 4)
        fail(node, "takes a predicate, two branches and their operands");
    const c10::IValue predicate = interpreter.valueOf(node.inputs[0].arg, values, nullptr);
    const bool taken = predicate.isTensor() ? predicate.toTensor().item<bool>() : asInt(predicate) != 0;
    std::vector<c10::IValue> operands;
    std::vector<bool> fromData;
    operandsOf(3, operands, fromData);
    const ExportGraph& body = graphAt(taken ? 1 : 2);
    ExportValues inner(&values);
    markData(runBody(body, operands, inner, fromData, iteration));
    bindOutputs(body, inner, nullptr);
}

void ExportInterpreter::HigherOrderCall::runWithGradMode()
{
    // wrap_with_set_grad_enabled(enabled, graph, *args)
    const bool enabled = asInt(interpreter.valueOf(node.inputs.at(0).arg, values, nullptr)) != 0;
    std::vector<c10::IValue> operands;
    std::vector<bool> fromData;
    operandsOf(2, operands, fromData);
    const ExportGraph& body = graphAt(1);
    ExportValues inner(&values);
    torch::AutoGradMode mode(enabled);
    markData(runBody(body, operands, inner, fromData, iteration));
    bindOutputs(body, inner, nullptr);
}

void ExportInterpreter::HigherOrderCall::runMap()
{
    // map_impl(f, xs, pos_args): f over the first dim of every xs, results stacked.
    const ExportGraph& body = graphAt(0);
    if (node.inputs.size() < 2 || node.inputs[1].arg.kind != ExportArgument::Kind::Tensors)
        fail(node, "maps over no tensors");
    std::vector<torch::Tensor> xs;
    for (const auto& name : node.inputs[1].arg.names)
        xs.push_back(interpreter.valueOf(ExportArgument{ExportArgument::Kind::Tensor, {name}}, values, nullptr).toTensor());
    std::vector<c10::IValue> rest;
    std::vector<bool> restData;
    operandsOf(2, rest, restData);
    const int64_t n = xs.empty() ? 0 : xs.front().size(0);
    std::vector<std::vector<torch::Tensor>> results;
    bool anyData = false;
    for (int64_t i = 0; i < n; ++i) {
        std::vector<c10::IValue> operands;
        std::vector<bool> fromData;
        for (size_t x = 0; x < xs.size(); ++x) {
            operands.emplace_back(xs[x].select(0, i));
            fromData.push_back(dataNames.count(node.inputs[1].arg.names[x]) > 0);
        }
        operands.insert(operands.end(), rest.begin(), rest.end());
        fromData.insert(fromData.end(), restData.begin(), restData.end());
        ExportValues inner(&values);
        anyData = runBody(body, operands, inner, fromData, int(i)) || anyData;
        std::vector<torch::Tensor> outs;
        for (const auto& output : body.outputs)
            for (const auto& name : output.names)
                if (const c10::IValue* v = inner.find(name); v && v->isTensor())
                    outs.push_back(v->toTensor());
        results.push_back(std::move(outs));
    }
    std::vector<c10::IValue> stacked;
    for (size_t k = 0; !results.empty() && k < results.front().size(); ++k) {
        std::vector<torch::Tensor> column;
        for (const auto& r : results)
            column.push_back(r.at(k));
        stacked.emplace_back(torch::stack(column));
    }
    if (stacked.size() < written.size())
        fail(node, "its function returned fewer tensors than the node lists");
    markData(anyData);
    bindOutputs(body, values, &stacked);
}

void ExportInterpreter::runHigherOrder(const ExportNode& node, ExportValues& values, std::set<std::string>& dataNames,
                                       const OpObserver& observe, int iteration) const
{
    HigherOrderCall call{*this, node, values, dataNames, observe, iteration, {}};
    for (const auto& output : node.outputs)
        namesWritten(output, call.written);
    if (node.target == "torch.ops.higher_order.cond")
        call.runCond();
    else if (node.target == "torch.ops.higher_order.wrap_with_set_grad_enabled")
        call.runWithGradMode();
    else if (node.target == "torch.ops.higher_order.map_impl")
        call.runMap();
}

} // namespace nanscope::replaytorch
