#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// What the replay keeps of the tensors its probes see. Not the tensors: holding every op's
// output until the forward ends would keep alive what autograd lets go (a BatchNorm's output
// before its ReLU), and each such block would cost its pages again on the next step. A probe takes the
// statistics as the op runs; later steps need only to know a tensor again (a weak reference, which
// keeps its TensorImpl's address from being reused but not its memory) and to find its gradient
// (a hook on the autograd node that made it).

#include "core/tensor/TensorStats.h"

#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <set>
#include <utility>

namespace nanscope::replaytorch {

using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// Where a value's gradient arrives in backward: the autograd node that made it, and which of the
// node's outputs it is. The node is held, so its address names it until the replay ends.
struct GradientSlot
{
    // The node that made the value: a shared_ptr in older LibTorch, an intrusive_ptr in newer.
    std::decay_t<decltype(std::declval<const torch::Tensor&>().grad_fn())> node;
    uint32_t output = 0;
    using Key = std::pair<const torch::autograd::Node*, uint32_t>;
    Key key() const { return {node.get(), output}; }
    bool operator<(const GradientSlot& other) const { return key() < other.key(); }
};

// One tensor as a probe saw it.
struct SeenTensor
{
    WeakTensor value{c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()}; // to know it again; expires with the tensor
    std::optional<GradientSlot> slot;  // a value an op made, with autograd on
    bool accumulatesGradient = false;  // a leaf that requires grad (a parameter): its .grad

    const c10::TensorImpl* identity() const { return value._unsafe_get_target(); }
    bool is(const torch::Tensor& tensor) const { return tensor.defined() && identity() == tensor.unsafeGetTensorImpl(); }
};

SeenTensor see(const torch::Tensor& tensor);

// The gradient statistics of every value a probe saw made, taken by a pre-hook on its autograd
// node as backward passes the gradient: nothing is copied or kept (retain_grad kept a copy of
// every gradient, and reading them back afterwards was half of a CNN's replay).
class GradientStatistics
{
public:
    // Hooks the value's slot, once per slot; a value with no slot (a leaf, no autograd) is ignored.
    void watch(const SeenTensor& value);
    // After backward: the value's gradient, from its hook, or a leaf's accumulated .grad while
    // the leaf lives. Empty when backward did not reach it.
    std::optional<TensorStats> of(const SeenTensor& value) const;
    // After backward: a leaf's (a parameter's) accumulated gradient, measured once however often it
    // is asked for (the backward culprit's search reads every op input's, the parameter rows
    // each parameter's): a weight's gradient is read from memory once, not once per question.
    std::optional<TensorStats> ofLeaf(const torch::Tensor& leaf) const;

    // What the hooks share: the statistics by slot, and the last gradient they measured.
    struct Taken
    {
        std::map<GradientSlot::Key, TensorStats> bySlot;
        torch::Tensor lastGradient;
        TensorStats lastStats;
        std::map<const c10::TensorImpl*, TensorStats> byLeaf;
    };

private:
    std::shared_ptr<Taken> m_taken = std::make_shared<Taken>();
    std::set<GradientSlot> m_watched; // holds the nodes, so no other node takes a key's address

};

} // namespace nanscope::replaytorch
