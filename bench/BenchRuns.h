#pragma once

// Writes the large synthetic runs the benchmarks read: S steps of scalars and an S x L
// /layers/grad_norm table with lognormal noise, a blow-up in the last 5% and one NaN step.

#include "core/run/RunWriter.h"

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace nanscope::bench {

inline Status writeLargeRun(const std::string& dir, int64_t steps, int64_t layers)
{
    std::filesystem::remove_all(dir);
    std::vector<std::string> names;
    for (int64_t i = 0; i < layers; ++i)
        names.push_back("block" + std::to_string(i / 4) + ".param" + std::to_string(i % 4));
    RunSchema schema;
    schema.scalars = {"loss", "grad_norm", "lr", "skipped"};
    schema.layers = names;
    schema.layerParamNorm = false;
    schema.layerGradNonfinite = false;
    auto writer = RunWriter::create(dir, schema);
    if (!writer)
        return Error{writer.error()};
    std::mt19937 rng(7);
    std::lognormal_distribution<float> noise(0.f, 0.5f);
    const int64_t block = 1024;
    const int64_t blowupStart = steps - steps / 20;
    for (int64_t begin = 0; begin < steps; begin += block) {
        const int64_t count = std::min(block, steps - begin);
        std::vector<int64_t> blockSteps(static_cast<size_t>(count));
        std::vector<float> grad(static_cast<size_t>(count * layers));
        for (int64_t r = 0; r < count; ++r) {
            const int64_t step = begin + r;
            blockSteps[size_t(r)] = step;
            const float growth = step > blowupStart ? std::pow(10.f, float(step - blowupStart) / float(steps / 100)) : 1.f;
            for (int64_t c = 0; c < layers; ++c)
                grad[size_t(r * layers + c)] = step == steps - 10 ? NAN : noise(rng) * growth;
        }
        Status status = (*writer)->appendRows("layers", blockSteps, {{"grad_norm", grad}});
        if (!status)
            return status;
    }
    for (int64_t step = 0; step < steps; ++step) {
        Status status = (*writer)->appendScalars(
            step, {{"loss", 2.0 / (1 + step * 1e-4) * noise(rng)}, {"grad_norm", noise(rng)}, {"lr", 1e-3}, {"skipped", 0}});
        if (!status)
            return status;
    }
    return (*writer)->close();
}

} // namespace nanscope::bench
