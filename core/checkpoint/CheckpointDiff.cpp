#include "core/checkpoint/CheckpointDiff.h"

#include "core/tensor/TensorStats.h"

#include <cmath>
#include <map>
#include <set>

namespace nanscope {

namespace {

TensorDiff diffTensors(const std::string& name, const TensorView& a, const TensorView& b)
{
    TensorDiff d;
    d.name = name;
    d.shapeA = a.shape;
    d.shapeB = b.shape;
    d.dtypeA = a.dtype;
    d.dtypeB = b.dtype;
    if (a.shape != b.shape) {
        d.comparable = false;
        return d;
    }
    const std::vector<double> x = tensorToDoubles(a);
    const std::vector<double> y = tensorToDoubles(b);
    double sumA = 0, sumB = 0, sumDiff = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const bool finiteA = std::isfinite(x[i]);
        const bool finiteB = std::isfinite(y[i]);
        d.nonfiniteA += !finiteA;
        d.nonfiniteB += !finiteB;
        d.becameNonfinite += finiteA && !finiteB;
        d.becameFinite += !finiteA && finiteB;
        if (finiteA)
            sumA += x[i] * x[i];
        if (finiteB)
            sumB += y[i] * y[i];
        if (finiteA && finiteB)
            sumDiff += (y[i] - x[i]) * (y[i] - x[i]);
    }
    d.normA = std::sqrt(sumA);
    d.normB = std::sqrt(sumB);
    d.diffNorm = std::sqrt(sumDiff);
    if (d.normA > 0)
        d.relativeUpdate = d.diffNorm / d.normA;
    return d;
}

} // namespace

CheckpointDiff diffCheckpoints(const Checkpoint& a, const Checkpoint& b)
{
    CheckpointDiff diff;
    std::map<std::string, const TensorView*> inB;
    for (const auto& t : b.tensors)
        inB.emplace(t.name, &t.tensor);
    std::set<std::string> inA;
    for (const auto& t : a.tensors) {
        inA.insert(t.name);
        const auto it = inB.find(t.name);
        if (it == inB.end())
            diff.onlyInA.push_back(t.name);
        else
            diff.tensors.push_back(diffTensors(t.name, t.tensor, *it->second));
    }
    for (const auto& t : b.tensors)
        if (!inA.count(t.name))
            diff.onlyInB.push_back(t.name);
    return diff;
}

} // namespace nanscope
