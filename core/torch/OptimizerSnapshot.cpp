#include "core/torch/OptimizerSnapshot.h"

namespace nanscope::optimizersnapshot {

torch::Tensor deepCopy(const torch::Tensor& t)
{
    return t.defined() ? t.detach().clone() : torch::Tensor();
}

// Adam and AdamW keep the same three moment tensors under the same names.
template <class AdamState>
std::unique_ptr<torch::optim::OptimizerParamState> deepCopyAdamLike(const AdamState& s)
{
    auto copy = std::make_unique<AdamState>(s);
    copy->exp_avg(deepCopy(s.exp_avg())).exp_avg_sq(deepCopy(s.exp_avg_sq())).max_exp_avg_sq(deepCopy(s.max_exp_avg_sq()));
    return copy;
}

std::unique_ptr<torch::optim::OptimizerParamState> deepCopy(const torch::optim::OptimizerParamState& state)
{
    namespace o = torch::optim;
    if (const auto* s = dynamic_cast<const o::AdamParamState*>(&state))
        return deepCopyAdamLike(*s);
    if (const auto* s = dynamic_cast<const o::AdamWParamState*>(&state))
        return deepCopyAdamLike(*s);
    if (const auto* s = dynamic_cast<const o::SGDParamState*>(&state)) {
        auto copy = std::make_unique<o::SGDParamState>(*s);
        copy->momentum_buffer(deepCopy(s->momentum_buffer()));
        return copy;
    }
    if (const auto* s = dynamic_cast<const o::RMSpropParamState*>(&state)) {
        auto copy = std::make_unique<o::RMSpropParamState>(*s);
        copy->square_avg(deepCopy(s->square_avg())).momentum_buffer(deepCopy(s->momentum_buffer())).grad_avg(deepCopy(s->grad_avg()));
        return copy;
    }
    if (const auto* s = dynamic_cast<const o::AdagradParamState*>(&state)) {
        auto copy = std::make_unique<o::AdagradParamState>(*s);
        copy->sum(deepCopy(s->sum()));
        return copy;
    }
    return nullptr;
}

std::optional<int64_t> updateCount(torch::optim::Optimizer& optimizer)
{
    namespace o = torch::optim;
    if (!dynamic_cast<o::Adam*>(&optimizer) && !dynamic_cast<o::AdamW*>(&optimizer) &&
        !dynamic_cast<o::RMSprop*>(&optimizer) && !dynamic_cast<o::Adagrad*>(&optimizer))
        return std::nullopt;
    int64_t largest = 0;
    for (const auto& [key, state] : optimizer.state()) {
        const o::OptimizerParamState* s = state.get();
        if (const auto* adam = dynamic_cast<const o::AdamParamState*>(s))
            largest = std::max(largest, adam->step());
        else if (const auto* adamw = dynamic_cast<const o::AdamWParamState*>(s))
            largest = std::max(largest, adamw->step());
        else if (const auto* rms = dynamic_cast<const o::RMSpropParamState*>(s))
            largest = std::max(largest, rms->step());
        else if (const auto* adagrad = dynamic_cast<const o::AdagradParamState*>(s))
            largest = std::max(largest, adagrad->step());
    }
    return largest;
}

bool rollbackKnows(torch::optim::Optimizer& optimizer)
{
    namespace o = torch::optim;
    return dynamic_cast<o::Adam*>(&optimizer) || dynamic_cast<o::AdamW*>(&optimizer) ||
           dynamic_cast<o::SGD*>(&optimizer) || dynamic_cast<o::RMSprop*>(&optimizer) ||
           dynamic_cast<o::Adagrad*>(&optimizer);
}

std::optional<GoodState> takeGoodState(const guardmodel::ModelAccess& model, torch::optim::Optimizer& optimizer,
                                       int64_t step)
{
    GoodState s;
    s.step = step;
    torch::NoGradGuard noGrad;
    for (const auto& p : model.parameters)
        s.parameters.push_back(p.tensor.detach().clone());
    for (const auto& b : model.buffers)
        s.buffers.push_back(deepCopy(b.tensor));
    for (const auto& [key, state] : optimizer.state()) {
        auto copy = deepCopy(*state);
        if (!copy)
            return std::nullopt;
        s.optimizer.push_back({key, std::move(copy)});
    }
    return s;
}

void restoreGoodState(const GoodState& good, guardmodel::ModelAccess& model, torch::optim::Optimizer& optimizer)
{
    torch::NoGradGuard noGrad;
    for (size_t i = 0; i < model.parameters.size(); ++i)
        model.parameters[i].tensor.copy_(good.parameters[i]);
    for (size_t i = 0; i < model.buffers.size(); ++i)
        if (good.buffers[i].defined())
            model.buffers[i].tensor.copy_(good.buffers[i]);
    auto& state = optimizer.state();
    state.clear();
    for (const auto& [key, saved] : good.optimizer)
        state[key] = deepCopy(*saved);
}

} // namespace nanscope::optimizersnapshot
