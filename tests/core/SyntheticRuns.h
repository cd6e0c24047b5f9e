#pragma once

// Hand-shaped runs for the incident kinds the demo models cannot produce (AMP loss-scale
// cascades, long runs of skipped steps, vanishing layers, saturated inputs): ordinary noisy
// training, with a hook that bends one step's row.

#include "core/run/RunWriter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace nanscope::test {

struct SyntheticRow
{
    int64_t step = 0;
    std::map<std::string, double> scalars; // loss, grad_norm, skipped, loss_scale, lr
    std::vector<float> grads;              // one per layer
    float inputMax = 3.f;
    float inputNan = 0.f;
};

struct SyntheticRun
{
    int64_t steps = 400;
    uint32_t seed = 1;
    std::vector<std::string> layers{"encoder.0.weight", "encoder.0.bias", "encoder.2.weight", "encoder.2.bias",
                                    "head.weight", "head.bias"};
    bool lossScale = false;
    bool inputs = true;
    double noiseDecades = 0.15; // row-to-row scatter of log10 grad norms
    std::function<void(SyntheticRow&)> shape;
    bool skippedScalar = true; // false: skipped steps only as events
    // Events (kind, message) to log at a step.
    std::function<std::vector<std::pair<std::string, std::string>>(int64_t)> events;
};

// Writes the run; `keepOpen` returns the writer still open (a run being written).
inline std::unique_ptr<RunWriter> writeSyntheticRun(const std::string& directory, const SyntheticRun& run,
                                                    bool keepOpen = false)
{
    RunSchema schema;
    schema.attributes = {{"run_name", "synthetic"}, {"amp_dtype", run.lossScale ? "float16" : "none"}};
    schema.scalars = {"loss", "grad_norm", "lr"};
    if (run.skippedScalar)
        schema.scalars.push_back("skipped");
    if (run.lossScale)
        schema.scalars.push_back("loss_scale");
    schema.layers = run.layers;
    if (run.inputs)
        schema.inputs = {"x"};
    auto created = RunWriter::create(directory, schema);
    EXPECT_TRUE(created) << created.error();
    if (!created)
        return nullptr;
    std::unique_ptr<RunWriter> writer = std::move(*created);
    std::mt19937 rng(run.seed);
    std::normal_distribution<double> noise(0.0, 1.0);
    double scale = 65536;
    for (int64_t step = 0; step < run.steps; ++step) {
        SyntheticRow row;
        row.step = step;
        const double loss = 2.0 * std::exp(-double(step) / 150.0) + 0.1;
        row.scalars["loss"] = loss * std::pow(10.0, 0.1 * noise(rng));
        row.scalars["lr"] = 1e-3;
        row.scalars["skipped"] = 0;
        double total = 0;
        for (size_t l = 0; l < run.layers.size(); ++l) {
            const double base = (l % 2 == 0) ? 0.5 : 0.05;
            const float g = float(base * std::pow(10.0, run.noiseDecades * noise(rng)));
            row.grads.push_back(g);
        }
        if (run.lossScale) {
            // Warm-up: the scaler halves a few times until it fits, then grows every 100 steps.
            if (step > 0 && step <= 5)
                scale /= 2;
            else if (step > 0 && step % 100 == 0)
                scale *= 2;
            row.scalars["loss_scale"] = scale;
        }
        if (run.shape)
            run.shape(row);
        if (run.lossScale)
            scale = row.scalars["loss_scale"];
        for (float g : row.grads)
            total += double(g) * double(g);
        if (!row.scalars.count("grad_norm"))
            row.scalars["grad_norm"] = std::sqrt(total);
        if (!run.skippedScalar)
            row.scalars.erase("skipped");
        EXPECT_TRUE(writer->appendScalars(step, row.scalars));
        if (run.events)
            for (const auto& [kind, message] : run.events(step))
                EXPECT_TRUE(writer->appendEvent(step, kind, message));
        std::vector<float> nonfinite;
        for (float g : row.grads)
            nonfinite.push_back(std::isfinite(g) ? 0.f : 1.f);
        EXPECT_TRUE(writer->appendRow("layers", step, {{"grad_norm", row.grads}, {"grad_nonfinite", nonfinite}}));
        if (run.inputs)
            EXPECT_TRUE(writer->appendRow("inputs", step,
                                          {{"min", {-row.inputMax}},
                                           {"max", {row.inputMax}},
                                           {"mean", {0.f}},
                                           {"std", {1.f}},
                                           {"nan", {row.inputNan}},
                                           {"inf", {0.f}}}));
    }
    if (keepOpen)
        return writer;
    EXPECT_TRUE(writer->close());
    return nullptr;
}

} // namespace nanscope::test
