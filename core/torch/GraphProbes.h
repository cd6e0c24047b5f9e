#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// The probes: how every op the forward runs is seen, inside `if` and loop blocks too.
//
// A graph output can only be a value of the graph's top level, so ops inside a prim::If (a loss
// under `if labels is not None:`) or a prim::Loop were never seen. Instead, after every op of
// every block, the replay inserts a call to nanscope::probe(id, inputs, outputs), which hands
// the op's tensors to the replay as it runs (ProbedOps.h), once per execution: each loop
// iteration is a call of its own.

#include <torch/csrc/jit/ir/ir.h>
#include <torch/torch.h>

#include <functional>
#include <set>
#include <vector>

namespace nanscope::replaytorch {

// Called by every probe as it runs, with the op's tensors (the probe id is the probed node's
// index in insertProbes' list). The tensors are the op's own: what the callback does not keep is
// freed as the forward goes on, as it would be without the probe.
using ProbeCallback =
    std::function<void(int64_t id, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs)>;

// Routes the probes to a callback while it lives (one replay at a time per thread).
class ProbeRecording
{
public:
    explicit ProbeRecording(ProbeCallback onProbe);
    ~ProbeRecording();
    ProbeRecording(const ProbeRecording&) = delete;
    ProbeRecording& operator=(const ProbeRecording&) = delete;

private:
    ProbeCallback m_onProbe;
};

// An op (aten::..., or a Python op), not a prim:: node of the graph's own plumbing.
bool isOp(const torch::jit::Node* node);

// Inserts a probe after every op of every block; returns the probed nodes, by probe id.
std::vector<torch::jit::Node*> insertProbes(torch::jit::Graph& graph);

// The values computed from the batch (the graph's inputs after `self`, which the caller puts in
// `data`), in every block: an op's outputs are when any of its inputs is, or any value its blocks
// return. Ops on constants and weights alone (an attention mask of finfo.min, a position table) are not.
void markDataValues(torch::jit::Block* block, std::set<const torch::jit::Value*>& data);

// True for an op inside a loop's body (its records are numbered by iteration).
bool insideLoop(const torch::jit::Node* node);

} // namespace nanscope::replaytorch
