#include "core/torch/GraphProbes.h"

#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/script.h>

#include <algorithm>

namespace nanscope::replaytorch {

using torch::jit::Node;
using torch::jit::Value;

bool isOp(const Node* node)
{
    const auto kind = node->kind();
    return !kind.is_prim() || kind == c10::prim::PythonOp;
}

static thread_local const ProbeCallback* t_onProbe = nullptr;

static const torch::jit::RegisterOperators kProbeOperator({torch::jit::Operator(
    "nanscope::probe(int id, Tensor[] inputs, Tensor[] outputs) -> ()",
    [](torch::jit::Stack& stack) {
        auto outputs = torch::jit::pop(stack).toTensorVector();
        auto inputs = torch::jit::pop(stack).toTensorVector();
        const int64_t id = torch::jit::pop(stack).toInt();
        if (t_onProbe)
            (*t_onProbe)(id, inputs, outputs);
    },
    c10::AliasAnalysisKind::CONSERVATIVE)});

ProbeRecording::ProbeRecording(ProbeCallback onProbe) : m_onProbe(std::move(onProbe))
{
    t_onProbe = &m_onProbe;
}

ProbeRecording::~ProbeRecording()
{
    t_onProbe = nullptr;
}

static bool isTensorValue(const Value* v)
{
    return v->type()->cast<c10::TensorType>() != nullptr;
}

static void collectOps(torch::jit::Block* block, std::vector<Node*>& out)
{
    for (Node* node : block->nodes()) {
        if (isOp(node) && std::any_of(node->outputs().begin(), node->outputs().end(), isTensorValue))
            out.push_back(node);
        for (torch::jit::Block* sub : node->blocks())
            collectOps(sub, out);
    }
}

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

// Tensors, or containers of them: what carries data. A size read off the batch (x.shape[1])
// does not: a mask built to that size holds no value of the batch.
static bool carriesTensors(const c10::TypePtr& type)
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

bool insideLoop(const Node* node)
{
    for (const torch::jit::Block* block = node->owningBlock(); block && block->owningNode();
         block = block->owningNode()->owningBlock())
        if (block->owningNode()->kind() == c10::prim::Loop)
            return true;
    return false;
}

} // namespace nanscope::replaytorch
