#include "core/torch/GuardModel.h"

#include <sstream>

namespace nanscope::guardmodel {

std::string shapeText(const torch::Tensor& t)
{
    std::ostringstream out;
    out << t.sizes();
    return out.str();
}

std::string readableKind(std::string name)
{
    const auto colon = name.rfind("::");
    if (colon != std::string::npos)
        name = name.substr(colon + 2);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
        name.resize(name.size() - 4);
    return name;
}

static std::vector<NamedTensorRef> ownBuffers(const torch::nn::Module& module)
{
    std::vector<NamedTensorRef> out;
    for (const auto& b : module.named_buffers(false))
        out.push_back({b.key(), b.value()});
    return out;
}

CppModelAccess::CppModelAccess(torch::nn::Module& model)
    : m_model(model)
{
    for (const auto& p : model.named_parameters(true))
        parameters.push_back({p.key(), p.value()});
    for (const auto& b : model.named_buffers(true))
        buffers.push_back({b.key(), b.value()});
    // include_self = false: the root may not be owned by a shared_ptr (shared_from_this throws).
    addNormLayer("", ownBuffers(model));
    for (const auto& m : model.named_modules("", false))
        addNormLayer(m.key(), ownBuffers(*m.value()));
}

std::string CppModelAccess::kindOf(const std::string& path) const
{
    if (path.empty())
        return readableKind(m_model.name());
    for (const auto& m : m_model.named_modules("", false))
        if (m.key() == path)
            return readableKind(m.value()->name());
    return "";
}

void CppModelAccess::save(const std::string& path) const
{
    torch::serialize::OutputArchive archive;
    m_model.save(archive);
    archive.save_to(path);
}

ScriptModelAccess::ScriptModelAccess(const torch::jit::Module& model)
    : m_model(model)
{
    for (const auto& p : model.named_parameters(true))
        parameters.push_back({p.name, p.value});
    for (const auto& b : model.named_buffers(true))
        buffers.push_back({b.name, b.value});
    for (const auto& m : model.named_modules()) {
        std::vector<NamedTensorRef> own;
        for (const auto& b : m.value.named_buffers(false))
            own.push_back({b.name, b.value});
        addNormLayer(m.name, own);
    }
}

std::string ScriptModelAccess::kindOf(const std::string& path) const
{
    for (const auto& m : m_model.named_modules())
        if (m.name == path && m.value.type()->name())
            return m.value.type()->name()->name();
    return "";
}

} // namespace nanscope::guardmodel
