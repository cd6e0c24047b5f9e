#pragma once

// Internal to core/torch (includes LibTorch): one part of the torch.export replay (ExportReplay.cpp).
// Runs an exported graph (core/checkpoint/ExportedProgram) node by node: each ATen op through
// LibTorch's dispatcher by its schema (a boxed call, autograd on, as eager PyTorch runs it), the
// integer arithmetic export records on sizes (`_operator.mul` of a batch size), and the
// higher-order ops torch.cond, map and wrap_with_set_grad_enabled by running their subgraphs.
// Nothing else: an op this LibTorch does not register, an extension's op or a Python callable is
// refused by name. An op that ran can be observed (the replay's probes), with where it came from.

#include "core/checkpoint/ExportedProgram.h"
#include "core/torch/ProbedOps.h"

#include <ATen/core/ivalue.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace nanscope::replaytorch {

// The values of a graph as it runs, by name; a subgraph's scope reads its parent's too (a batch size).
class ExportValues
{
public:
    explicit ExportValues(const ExportValues* parent = nullptr) : m_parent(parent) {}
    void set(const std::string& name, c10::IValue value) { m_values[name] = std::move(value); }
    const c10::IValue* find(const std::string& name) const;

private:
    const ExportValues* m_parent;
    std::map<std::string, c10::IValue> m_values;
};

// Where an exported node came from: its module (the last entry of nn_module_stack, as PyTorch's
// named_modules() names it) and the innermost frame of its stack trace, with that line's code.
OpSite siteOfExportNode(const ExportNode& node);

class ExportInterpreter
{
public:
    // Called for every ATen op that returned a tensor, with its site (`fromData` and `iteration`
    // filled in) and its tensor inputs and outputs.
    using OpObserver = std::function<void(const OpSite& site, const std::vector<torch::Tensor>& inputs,
                                          const std::vector<torch::Tensor>& outputs)>;

    // `device`: where device arguments point (the replay's device, whatever the export recorded).
    // `checkMetadata` false skips the archive's dtype and device assertions (_assert_tensor_metadata),
    // for a replay in another precision than the one exported.
    ExportInterpreter(const ExportedProgram& program, torch::Device device, bool checkMetadata = true);

    // Every op the graph calls, found in this LibTorch before anything runs: an error names the
    // first it lacks, with the torch version that wrote the archive.
    Status resolveOps();

    // Runs the graph with `values` holding its inputs (by placeholder name); leaves every value it
    // computes in `values`. `dataNames`: the names computed from the batch, grown as it runs (an
    // op's outputs are data when any input is). Throws c10::Error or std::runtime_error naming the
    // node that failed.
    void run(const ExportGraph& graph, ExportValues& values, std::set<std::string>& dataNames,
             const OpObserver& observe = {}, int iteration = -1) const;

private:
    struct Resolved;
    struct HigherOrderCall; // ExportHigherOrder.cpp
    void runNode(const ExportNode& node, ExportValues& values, std::set<std::string>& dataNames, const OpObserver& observe,
                 int iteration) const;
    void runOperatorCall(const ExportNode& node, ExportValues& values) const;
    void runHigherOrder(const ExportNode& node, ExportValues& values, std::set<std::string>& dataNames,
                        const OpObserver& observe, int iteration) const;
    c10::IValue valueOf(const ExportArgument& arg, const ExportValues& values, const c10::TypePtr& type) const;
    Status resolveIn(const ExportGraph& graph);

    const ExportedProgram& m_program;
    torch::Device m_device;
    bool m_checkMetadata = true;
    std::map<std::string, std::shared_ptr<Resolved>> m_ops; // by target
};

} // namespace nanscope::replaytorch
