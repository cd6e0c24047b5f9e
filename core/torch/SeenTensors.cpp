#include "core/torch/SeenTensors.h"

#include "core/torch/TensorRange.h"

#include <torch/csrc/autograd/function_hook.h>

namespace nanscope::replaytorch {

SeenTensor see(const torch::Tensor& tensor)
{
    SeenTensor seen;
    if (!tensor.defined())
        return seen;
    seen.value = WeakTensor(tensor.getIntrusivePtr());
    if (!tensor.requires_grad())
        return seen;
    if (tensor.is_leaf())
        seen.accumulatesGradient = true;
    else if (auto node = tensor.grad_fn())
        seen.slot = GradientSlot{std::move(node), tensor.output_nr()};
    return seen;
}

namespace {

// Reads the gradient that reaches one output of a node, and passes every gradient on unchanged.
// It names its slot by address only: the node owns the hook, and a hook that held its node would
// keep both alive for ever.
class TakeGradientStatistics final : public torch::autograd::FunctionPreHook
{
public:
    using Taken = std::map<GradientSlot::Key, TensorStats>;
    TakeGradientStatistics(std::shared_ptr<Taken> taken, GradientSlot::Key slot) : m_taken(std::move(taken)), m_slot(slot) {}

    torch::autograd::variable_list operator()(const torch::autograd::variable_list& gradients) override
    {
        if (m_slot.second < gradients.size() && gradients[m_slot.second].defined())
            (*m_taken)[m_slot] = torchutil::tensorStats(gradients[m_slot.second]);
        return gradients;
    }

private:
    std::shared_ptr<Taken> m_taken;
    GradientSlot::Key m_slot;
};

} // namespace

void GradientStatistics::watch(const SeenTensor& value)
{
    if (value.slot && m_watched.insert(*value.slot).second)
        value.slot->node->add_pre_hook(std::make_unique<TakeGradientStatistics>(m_taken, value.slot->key()));
}

std::optional<TensorStats> GradientStatistics::of(const SeenTensor& value) const
{
    if (value.accumulatesGradient) {
        const torch::Tensor leaf(value.value.lock());
        if (!leaf.defined() || !leaf.grad().defined())
            return std::nullopt;
        return torchutil::tensorStats(leaf.grad());
    }
    if (!value.slot)
        return std::nullopt;
    const auto it = m_taken->find(value.slot->key());
    return it == m_taken->end() ? std::nullopt : std::optional<TensorStats>(it->second);
}

} // namespace nanscope::replaytorch
