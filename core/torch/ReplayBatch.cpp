#include "core/torch/ReplayBatch.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/torch/TorchDType.h"

namespace nanscope::replaytorch {

static torch::Tensor toTorch(const TensorView& view)
{
    std::vector<uint8_t> bytes = view.contiguousBytes();
    return torch::from_blob(bytes.data(), view.shape, torchdtype::scalarTypeOf(view.dtype)).clone();
}

// The batch is read with the project's restricted unpickler: a batch file is data, and reading
// it must not run anything named in it.
Result<Batch> readBatch(const std::string& path)
{
    auto tree = readPickledFile(path);
    if (!tree)
        return Error{tree.error()};
    if (tree->kind != PickledValue::Kind::Dict)
        return Error{path + ": a batch file must hold a dict with \"inputs\" (and \"targets\", \"loss\")"};
    Batch batch;
    const PickledValue* inputs = tree->find("inputs");
    if (!inputs)
        return Error{path + ": the batch has no \"inputs\""};
    if (inputs->isTensor())
        batch.inputs.push_back(toTorch(*inputs->tensor));
    else if (inputs->kind == PickledValue::Kind::List) {
        for (const auto& item : inputs->items) {
            if (!item.isTensor())
                return Error{path + ": \"inputs\" must be a tensor or a list of tensors"};
            batch.inputs.push_back(toTorch(*item.tensor));
        }
    } else if (inputs->kind == PickledValue::Kind::Dict) {
        for (const auto& [key, value] : inputs->entries) {
            if (key.kind != PickledValue::Kind::String)
                return Error{path + ": \"inputs\" is a dict whose keys are not all names"};
            // A setting beside the tensors (return_loss=True from CLIP's collator) is baked into an
            // exported program, which takes it as a constant input: nothing to feed.
            using K = PickledValue::Kind;
            if (value.isTensor())
                batch.namedInputs.emplace_back(key.text, toTorch(*value.tensor));
            else if (!value.isNone() && value.kind != K::Bool && value.kind != K::Int && value.kind != K::Double &&
                     value.kind != K::String)
                return Error{path + ": \"inputs\" entry '" + key.text + "' is neither a tensor nor a setting"};
        }
    } else
        return Error{path + ": \"inputs\" must be a tensor, a list of tensors or a dict of them"};
    if (batch.inputs.empty() && batch.namedInputs.empty())
        return Error{path + ": the batch has no \"inputs\""};
    if (const PickledValue* targets = tree->find("targets"); targets && targets->isTensor())
        batch.targets = toTorch(*targets->tensor);
    if (const PickledValue* loss = tree->find("loss"); loss && loss->kind == PickledValue::Kind::String)
        batch.lossName = loss->text;
    if (const PickledValue* call = tree->find("call"); call && call->kind == PickledValue::Kind::String)
        batch.call = call->text;
    if (const PickledValue* step = tree->find("step"); step && step->kind == PickledValue::Kind::Int)
        batch.step = step->integer;
    return batch;
}

} // namespace nanscope::replaytorch
