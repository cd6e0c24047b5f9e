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

// True when `a` and `b` hold the same elements in the same memory, each filling its block
// densely: the same set of values, whatever their shapes and strides.
bool sameDenseElements(const torch::Tensor& a, const torch::Tensor& b)
{
    return a.data_ptr() == b.data_ptr() && a.numel() == b.numel() && a.scalar_type() == b.scalar_type() &&
           a.device() == b.device() && a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense();
}

// Reads the gradient that reaches one output of a node, and passes every gradient on unchanged.
// It names its slot by address only: the node owns the hook, and a hook that held its node would
// keep both alive for ever.
class TakeGradientStatistics final : public torch::autograd::FunctionPreHook
{
public:
    TakeGradientStatistics(std::shared_ptr<GradientStatistics::Taken> taken, GradientSlot::Key slot)
        : m_taken(std::move(taken)), m_slot(slot)
    {
    }

    torch::autograd::variable_list operator()(const torch::autograd::variable_list& gradients) override
    {
        if (m_slot.second >= gradients.size() || !gradients[m_slot.second].defined())
            return gradients;
        const torch::Tensor& gradient = gradients[m_slot.second];
        // The gradient a view, a transpose or a reshape passes back is the one it received,
        // rearranged: its statistics are those just taken. The last gradient measured is held, so
        // its memory is not reused by another tensor while it is compared with the next (and
        // autograd does not accumulate into it in place).
        TensorStats stats;
        if (m_taken->lastGradient.defined() && sameDenseElements(gradient, m_taken->lastGradient)) {
            stats = m_taken->lastStats;
            stats.shape = gradient.sizes().vec();
        } else {
            stats = torchutil::tensorStats(gradient);
            m_taken->lastGradient = gradient;
            m_taken->lastStats = stats;
        }
        m_taken->bySlot[m_slot] = std::move(stats);
        return gradients;
    }

private:
    std::shared_ptr<GradientStatistics::Taken> m_taken;
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
    if (value.accumulatesGradient)
        return ofLeaf(torch::Tensor(value.value.lock()));
    if (!value.slot)
        return std::nullopt;
    const auto it = m_taken->bySlot.find(value.slot->key());
    return it == m_taken->bySlot.end() ? std::nullopt : std::optional<TensorStats>(it->second);
}

std::optional<TensorStats> GradientStatistics::ofLeaf(const torch::Tensor& leaf) const
{
    if (!leaf.defined() || !leaf.grad().defined())
        return std::nullopt;
    // Keyed by the leaf, which the caller holds: its address is not reused meanwhile.
    auto it = m_taken->byLeaf.find(leaf.unsafeGetTensorImpl());
    if (it == m_taken->byLeaf.end())
        it = m_taken->byLeaf.emplace(leaf.unsafeGetTensorImpl(), torchutil::tensorStats(leaf.grad())).first;
    return it->second;
}

} // namespace nanscope::replaytorch
