#pragma once

#include "core/Progress.h"
#include "core/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

// The failure a demo run reproduces. Each is a real LibTorch training run of a small
// TorchScript model, so its checkpoints replay and its logs carry real optimiser noise.
enum class DemoFailure {
    None,            // healthy: ordinary noise, no incident
    CorruptBatch,    // sudden blow-up: one batch holds fill values (999999999)
    LearningRateRamp,// gradual blow-up: the learning rate grows until training diverges
    DivisionByZero,  // one constant sample hits a normalisation without eps; the step is skipped
    PoisonedBatchNorm// a NaN input poisons BatchNorm running stats; the step is skipped, loss recovers
};

enum class DemoLearningRateSchedule { Constant, Cosine, StepDecay, Warmup };

struct DemoScenario
{
    std::string name;
    std::string description;
    DemoFailure failure = DemoFailure::None;
    uint64_t seed = 1;
    int64_t steps = 400;
    int64_t failureStep = 250;  // where the failure is injected (ramp: where lr starts growing)
    int64_t activationsEvery = 5;
    int64_t checkpointEvery = 50;
    int64_t hiddenWidth = 32;
    double inputNoise = 1.0;     // spread of the samples around their class centres
    double learningRate = 0.05;
    DemoLearningRateSchedule schedule = DemoLearningRateSchedule::Constant;
    int64_t cutShortAtStep = -1; // >= 0: the run stops there, as if killed
    // Steps to keep training after the first non-finite loss before giving up, as a user would.
    int64_t stepsAfterFailure = 30;
};

// The five runs `nanscope demo` writes, in the order users meet them.
std::vector<DemoScenario> demoScenarios();

// Trains the scenario's model and writes a conforming run directory at `runDirectory`.
Status writeDemoRun(const std::string& runDirectory, const DemoScenario& scenario,
                    const ProgressCallback& progress = {});

} // namespace nanscope
