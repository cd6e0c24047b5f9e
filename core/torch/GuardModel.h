#pragma once

// Internal to core/torch (includes LibTorch): one part of the Guard (Guard.cpp).
// What the Guard needs of a model, for a C++ torch::nn::Module and a TorchScript module alike:
// its parameters, buffers and BatchNorm-like layers, their kinds, and how to save it.

#include <torch/script.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace nanscope::guardmodel {

struct NamedTensorRef
{
    std::string name;
    torch::Tensor tensor;
};

// A BatchNorm-like layer: a module with running_mean and running_var buffers.
struct NormLayer
{
    std::string path;
    torch::Tensor runningMean, runningVar;
    std::vector<NamedTensorRef> buffers; // every buffer of the layer (num_batches_tracked too)
};

// "[4, 5]", as LibTorch prints sizes.
std::string shapeText(const torch::Tensor& t);

// "torch::nn::LinearImpl" -> "Linear": the class name users know from Python.
std::string readableKind(std::string name);

// What the Guard needs of a model, for a C++ module and a TorchScript module alike.
class ModelAccess
{
public:
    virtual ~ModelAccess() = default;
    virtual std::string kindOf(const std::string& path) const = 0;
    virtual void save(const std::string& path) const = 0;
    virtual const char* checkpointKind() const = 0;

    std::vector<NamedTensorRef> parameters;
    std::vector<NamedTensorRef> buffers;
    std::vector<NormLayer> norms;

protected:
    void addNormLayer(const std::string& path, const std::vector<NamedTensorRef>& own)
    {
        NormLayer layer;
        layer.path = path;
        for (const auto& b : own) {
            if (!b.tensor.defined())
                continue;
            if (b.name == "running_mean")
                layer.runningMean = b.tensor;
            else if (b.name == "running_var")
                layer.runningVar = b.tensor;
            layer.buffers.push_back({path.empty() ? b.name : path + "." + b.name, b.tensor});
        }
        if (layer.runningMean.defined() && layer.runningVar.defined())
            norms.push_back(std::move(layer));
    }
};

class CppModelAccess : public ModelAccess
{
public:
    explicit CppModelAccess(torch::nn::Module& model);
    std::string kindOf(const std::string& path) const override;
    void save(const std::string& path) const override;
    const char* checkpointKind() const override { return "LibTorch archive"; }

private:
    torch::nn::Module& m_model;
};

class ScriptModelAccess : public ModelAccess
{
public:
    explicit ScriptModelAccess(const torch::jit::Module& model);
    std::string kindOf(const std::string& path) const override;
    void save(const std::string& path) const override { m_model.save(path); }
    const char* checkpointKind() const override { return "TorchScript"; }

private:
    torch::jit::Module m_model; // a handle: it shares the user's module
};

} // namespace nanscope::guardmodel
