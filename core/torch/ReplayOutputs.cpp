#include "core/torch/ReplayOutputs.h"

#include "core/torch/TorchDType.h"

#include <cmath>
#include <optional>
#include <stdexcept>

namespace nanscope::replaytorch {

torch::Tensor firstTensor(const c10::IValue& value)
{
    if (value.isTensor())
        return value.toTensor();
    if (value.isTuple())
        for (const auto& e : value.toTupleRef().elements())
            if (e.isTensor())
                return e.toTensor();
    if (value.isList())
        for (const auto& e : value.toListRef())
            if (e.isTensor())
                return e.toTensor();
    return {};
}

torch::Tensor computeLoss(const std::string& name, const torch::Tensor& output, const torch::Tensor& targets)
{
    namespace F = torch::nn::functional;
    const auto out = output.to(torch::kFloat); // losses in fp32, as AMP does
    if (name == "cross_entropy")
        return F::cross_entropy(out, targets.to(torch::kLong));
    if (name == "nll")
        return F::nll_loss(out, targets.to(torch::kLong));
    if (name == "mse")
        return F::mse_loss(out, targets.to(torch::kFloat).view_as(out));
    if (name == "bce_with_logits")
        return F::binary_cross_entropy_with_logits(out, targets.to(torch::kFloat).view_as(out));
    throw std::invalid_argument("unknown loss '" + name + "' (cross_entropy, mse, nll, bce_with_logits)");
}

void collectTensors(const c10::IValue& value, std::vector<torch::Tensor>& tensors)
{
    if (value.isTensor())
        tensors.push_back(value.toTensor());
    else if (value.isTuple())
        for (const auto& e : value.toTupleRef().elements())
            collectTensors(e, tensors);
    else if (value.isList())
        for (const auto& e : value.toListRef())
            collectTensors(e, tensors);
    else if (value.isGenericDict())
        for (const auto& entry : value.toGenericDict())
            collectTensors(entry.value(), tensors);
}

// An entry of what forward returned, by name: a dict's "loss" or a NamedTuple's `loss` field.
static std::optional<c10::IValue> namedEntry(const c10::IValue& value, const c10::TypePtr& type, const std::string& name,
                                      std::string& access)
{
    if (value.isGenericDict()) {
        for (const auto& entry : value.toGenericDict())
            if (entry.key().isString() && entry.key().toStringRef() == name) {
                access = "['" + name + "']";
                return entry.value();
            }
        return std::nullopt;
    }
    if (value.isTuple())
        if (auto tuple = type ? type->cast<c10::TupleType>() : nullptr)
            if (auto names = tuple->names()) {
                const auto& elements = value.toTupleRef().elements();
                for (size_t i = 0; i < names->size() && i < elements.size(); ++i)
                    if (std::string((*names)[i]) == name) {
                        access = "." + name;
                        return elements[i];
                    }
            }
    return std::nullopt;
}

ReturnedLoss lossInOutput(const c10::IValue& value, const c10::TypePtr& type)
{
    auto isScalar = [](const torch::Tensor& t) { return t.defined() && t.dim() == 0 && t.is_floating_point(); };
    ReturnedLoss returned;
    if (auto logits = namedEntry(value, type, "logits", returned.logitsAccess); logits && logits->isTensor())
        returned.logits = logits->toTensor();
    if (value.isTensor()) {
        if (isScalar(value.toTensor()))
            returned.loss = value.toTensor();
        return returned;
    }
    if (auto loss = namedEntry(value, type, "loss", returned.access)) {
        if (loss->isTensor())
            returned.loss = loss->toTensor();
        return returned;
    }
    if (value.isTuple() && !value.toTupleRef().elements().empty()) {
        const auto& first = value.toTupleRef().elements()[0];
        if (first.isTensor() && isScalar(first.toTensor())) {
            returned.loss = first.toTensor();
            returned.access = "[0]";
        }
    }
    return returned;
}

std::string describeReturn(const c10::IValue& value)
{
    if (value.isTensor())
        return torchdtype::describe(value.toTensor());
    if (value.isGenericDict()) {
        std::string keys;
        for (const auto& entry : value.toGenericDict())
            keys += (keys.empty() ? "" : ", ") + (entry.key().isString() ? entry.key().toStringRef() : entry.key().tagKind());
        return "a dict (keys: " + (keys.empty() ? std::string("none") : keys) + ")";
    }
    if (value.isTuple()) {
        std::string items;
        for (const auto& e : value.toTupleRef().elements())
            items += (items.empty() ? "" : ", ") + (e.isTensor() ? torchdtype::describe(e.toTensor()) : e.tagKind());
        return "a tuple (" + items + ")";
    }
    return value.tagKind();
}

bool gradientsBad(const std::vector<torch::Tensor>& gradients, const BlowupBaseline& baseline)
{
    double squares = 0;
    for (const auto& g : gradients) {
        if (!g.defined())
            continue;
        if (!torch::isfinite(g).all().item<bool>())
            return true;
        if (baseline.gradNorm)
            squares += g.detach().to(torch::kDouble).pow(2).sum().item<double>();
    }
    return gradNormBlewUp(std::sqrt(squares), baseline);
}

} // namespace nanscope::replaytorch
