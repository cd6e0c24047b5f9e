#pragma once

// Internal to core/torch (includes LibTorch): one part of the replays of a graph, TorchScript's
// (Replay.cpp) and torch.export's (ExportReplay.cpp). What the instrumented forward learns of each
// op as it runs: the op's ReplayOp (where it is, its tensors' statistics, its softmax measures),
// and what later steps need to know its tensors again and find their gradients (SeenTensors.h).
// Statistics are taken as the op runs, while its tensors are fresh and before a later in-place op
// changes them.

#include "core/replay/ReplayTrace.h"
#include "core/torch/SeenTensors.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nanscope::replaytorch {

// Where an op ran and what kind of op it is, as the graph it came from says.
struct OpSite
{
    std::string op;     // "aten::div"
    std::string module; // "norm"; "" for the root module
    std::string source; // "model.py:42"
    std::string code;   // that line, trimmed
    int iteration = -1; // which run of a loop body (or of a mapped function); -1 elsewhere
    bool fromData = true;
    enum class Role { Other, Softmax, LogSoftmax, CrossEntropy } role = Role::Other;
    std::optional<int64_t> dim; // a softmax's dim argument, as written (may be negative)
};

// The dim along which an op's classes lie: a softmax's own dim, 1 for a cross-entropy of batched
// input (PyTorch's class dim), else the last.
int64_t classDimOf(const OpSite& site, const torch::Tensor& input);

class ProbedOps
{
public:
    // Records one op as it ran. An op whose statistics cannot be taken stops the recording;
    // failure() then says which op and why.
    void record(const OpSite& site, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs);
    const std::string& failure() const { return m_failure; }

    // Per recorded op, in the order they ran.
    std::vector<ReplayOp> ops;
    std::vector<std::vector<SeenTensor>> inputs;
    std::vector<SeenTensor> values; // each op's first output
    GradientStatistics gradients;

    // The logits a loss in forward read, when forward did not return them: the input of the last
    // softmax or cross-entropy op, kept (the one tensor the probes keep) for its log Z, and the dim
    // its classes lie along.
    torch::Tensor lastLogits;
    size_t lastLogitsOp = 0;
    int64_t lastLogitsDim = -1;

    // The op whose first output is `tensor`; -1 for none.
    int indexOf(const torch::Tensor& tensor) const;

    // A tensor's statistics, taken once: the ones an op input had already, when the tensor was one
    // and has not changed since (a parameter after backward: the forward only read it).
    std::optional<TensorStats> statsOnce(const torch::Tensor& tensor) { return cachedStats(tensor); }

    // After backward: the backward culprit (ReplayResult::gradCulprit), the first op in backward
    // order whose output's gradient is finite while a gradient it passed to an input is not.
    std::optional<ReplayOp> gradientCulprit() const;

private:
    std::optional<TensorStats> cachedStats(const torch::Tensor& tensor);

    // Statistics once per tensor: an op's input is usually the previous op's output. The seen
    // tensors' weak references keep a key's address from being reused by another tensor.
    std::map<const c10::TensorImpl*, std::optional<TensorStats>> m_statsCache;
    std::string m_failure;
};

// The TorchScript probes' callback (ProbeRecording): each probed node's site, from the inlined
// graph, recorded into `ops`.
class ScriptProbes
{
public:
    // `probedOps` by probe id (insertProbes), the values computed from the batch (markDataValues),
    // and the checkpoint's named_modules() paths; all outlive this.
    ScriptProbes(ProbedOps& ops, const std::vector<torch::jit::Node*>& probedOps,
                 const std::set<const torch::jit::Value*>& dataValues, const std::set<std::string>& modulePaths);
    void record(int64_t id, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs);

private:
    ProbedOps& m_ops;
    const std::vector<torch::jit::Node*>& m_probedOps;
    const std::set<const torch::jit::Value*>& m_dataValues;
    const std::set<std::string>& m_modulePaths;
    std::map<int64_t, int> m_executions; // probe id -> times run so far
};

} // namespace nanscope::replaytorch
