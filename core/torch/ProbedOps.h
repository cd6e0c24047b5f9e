#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// What the instrumented forward learns of each op as its probe runs (GraphProbes.h): the op's
// ReplayOp (where it is, its tensors' statistics, its softmax measures), and what later steps need
// to know its tensors again and find their gradients (SeenTensors.h). Statistics are taken as the
// op runs, while its tensors are fresh and before a later in-place op changes them.

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

class ProbedOps
{
public:
    // `probedOps` by probe id (insertProbes), the values computed from the batch (markDataValues),
    // and the checkpoint's named_modules() paths; all outlive this.
    ProbedOps(const std::vector<torch::jit::Node*>& probedOps, const std::set<const torch::jit::Value*>& dataValues,
              const std::set<std::string>& modulePaths);

    // The probe callback (ProbeRecording). An op whose statistics cannot be taken stops the
    // recording; failure() then says which op and why.
    void record(int64_t id, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs);
    const std::string& failure() const { return m_failure; }

    // Per recorded op, in the order they ran.
    std::vector<ReplayOp> ops;
    std::vector<const torch::jit::Node*> nodes;
    std::vector<std::vector<SeenTensor>> inputs;
    std::vector<SeenTensor> values; // each op's first output
    GradientStatistics gradients;

    // The logits a loss in forward read, when forward did not return them: the input of the last
    // softmax or cross-entropy op, kept (the one tensor the probes keep) for its log Z.
    torch::Tensor lastLogits;
    size_t lastLogitsOp = 0;

    // The op whose first output is `tensor`; -1 for none.
    int indexOf(const torch::Tensor& tensor) const;

private:
    std::optional<TensorStats> cachedStats(const torch::Tensor& tensor);

    const std::vector<torch::jit::Node*>& m_probedOps;
    const std::set<const torch::jit::Value*>& m_dataValues;
    const std::set<std::string>& m_modulePaths;
    std::map<int64_t, int> m_executions; // probe id -> times run so far
    // Statistics once per tensor: an op's input is usually the previous op's output. The seen
    // tensors' weak references keep a key's address from being reused by another tensor.
    std::map<const c10::TensorImpl*, std::optional<TensorStats>> m_statsCache;
    std::string m_failure;
};

} // namespace nanscope::replaytorch
