#include "core/torch/GuardFiles.h"

#include "core/run/CheckpointForm.h"
#include "core/torch/Guard.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace nanscope::guardfiles {

namespace fs = std::filesystem;

void saveAtomically(const std::string& path, const std::function<void(const std::string&)>& save)
{
    const std::string partial = path + ".partial";
    save(partial);
    fs::rename(partial, path);
}

void saveCheckpointFiles(const std::string& path, guardmodel::ModelAccess& model,
                         const std::vector<torch::Tensor>* preForwardBuffers)
{
    std::vector<torch::Tensor> current;
    std::vector<torch::Tensor*> live;
    torch::NoGradGuard noGrad;
    if (preForwardBuffers && !preForwardBuffers->empty()) {
        // Every live value is copied before the first write: buffers that share storage
        // (one registered under two names) would otherwise be put back with a written value.
        for (auto& layer : model.norms)
            for (auto& b : layer.buffers) {
                current.push_back(b.tensor.clone());
                live.push_back(&b.tensor);
            }
        for (size_t i = 0; i < live.size(); ++i)
            live[i]->copy_((*preForwardBuffers)[i]);
    }
    const bool scripted = std::string(model.checkpointKind()) == "TorchScript";
    const std::string form = scripted
        ? checkpointFormText(CheckpointForm::Kind::Scripted)
        : checkpointFormText(CheckpointForm::Kind::StateDict,
                             "the model is a C++ torch::nn::Module, saved as a LibTorch archive of its tensors; "
                             "guard a TorchScript module (torch::jit::Module) to make its checkpoints replayable");
    saveAtomically(std::filesystem::path(path).replace_extension(".form").string(), [&](const std::string& partial) {
        std::ofstream out(partial, std::ios::binary);
        out << form;
        if (!out.flush())
            throw std::runtime_error("cannot write " + partial);
    });
    try {
        saveAtomically(path, [&](const std::string& partial) { model.save(partial); });
    } catch (...) {
        for (size_t i = live.size(); i-- > 0;)
            live[i]->copy_(current[i]);
        throw;
    }
    // In reverse: where two names share storage, the first copy (the untouched value) is written last.
    for (size_t i = live.size(); i-- > 0;)
        live[i]->copy_(current[i]);
}

namespace {

// torch::pickle_save, without its type tags: it marks a dict that is not Dict[str, Tensor] with
// torch.jit._pickle.restore_type_tag, a global that torch.load refuses under weights_only=True (the
// default since torch 2.6), so a user's `torch.load(batch)` failed. The same zip archive (data.pkl
// and data/<i> for each tensor) as torch.save writes, which torch.load reads with weights_only.
std::vector<char> pickleWithoutTypeTags(const c10::IValue& value)
{
    std::vector<char> pickled;
    torch::jit::Pickler pickler([&](const char* bytes, size_t size) { pickled.insert(pickled.end(), bytes, bytes + size); },
                                nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
    pickler.protocol();
    pickler.pushIValue(value);
    pickler.stop();
    std::vector<char> archive;
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t size) -> size_t {
        const char* begin = static_cast<const char*>(bytes);
        archive.insert(archive.end(), begin, begin + size);
        return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
    return archive;
}

} // namespace

void saveBatchFile(const std::string& path, const torch::Tensor& inputs, const torch::Tensor& targets, int64_t step,
                   const std::string& lossName)
{
    c10::impl::GenericDict batch(c10::StringType::get(), c10::AnyType::get());
    batch.insert("inputs", inputs.detach().cpu());
    if (targets.defined())
        batch.insert("targets", targets.detach().cpu());
    if (!lossName.empty())
        batch.insert("loss", lossName);
    batch.insert("step", step);
    const std::vector<char> bytes = pickleWithoutTypeTags(c10::IValue(batch));
    saveAtomically(path, [&](const std::string& partial) {
        std::ofstream out(partial, std::ios::binary);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        if (!out)
            throw GuardError(partial + ": cannot write the batch");
    });
}

namespace {

// A tensor's version counter; nullopt for one that has none (an inference tensor).
std::optional<uint32_t> versionOf(const torch::Tensor& t)
{
    if (!t.defined())
        return 0u;
    if (t.is_inference())
        return std::nullopt;
    return t._version();
}

// Held as it is when its version can be watched, else copied (the loop may reuse it).
torch::Tensor heldCopy(const torch::Tensor& t, const std::optional<uint32_t>& version)
{
    if (!t.defined() || version)
        return t;
    return t.detach().clone();
}

} // namespace

void HealthyBatch::hold(int64_t step, const torch::Tensor& inputs, const torch::Tensor& targets, bool saved)
{
    Held held;
    held.step = step;
    held.inputsVersion = versionOf(inputs);
    held.targetsVersion = versionOf(targets);
    held.inputs = heldCopy(inputs, held.inputsVersion);
    held.targets = heldCopy(targets, held.targetsVersion);
    held.saved = saved;
    m_held = std::move(held);
}

std::optional<int64_t> HealthyBatch::unsavedStep() const
{
    if (!m_held || m_held->saved || !m_held->inputs.defined())
        return std::nullopt;
    const auto unchanged = [](const torch::Tensor& t, const std::optional<uint32_t>& version) {
        return !version || !t.defined() || t._version() == *version;
    };
    if (!unchanged(m_held->inputs, m_held->inputsVersion) || !unchanged(m_held->targets, m_held->targetsVersion))
        return std::nullopt;
    return m_held->step;
}

void HealthyBatch::save(const std::string& path, const std::string& lossName)
{
    if (!m_held)
        return;
    saveBatchFile(path, m_held->inputs, m_held->targets, m_held->step, lossName);
    m_held->saved = true;
}

} // namespace nanscope::guardfiles
