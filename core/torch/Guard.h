#pragma once

// nanscope::Guard: the guard core inside a LibTorch training loop. It writes the same run
// directory as the Python recorder (python/nanscope_recorder) through RunWriterThread, and it
// defends the run: a step whose loss or gradients are not finite is skipped, and (when asked) the
// weights and optimizer state roll back to the last good ones after N such steps in a row.
//
//     nanscope::Guard guard("runs/today", *model, options);   // model: a torch::nn::Module or a torch::jit::Module
//     for (int64_t step = 0; ...; ++step) {
//         guard.beginStep(step, inputs, targets);
//         auto loss = loss_fn(model->forward(inputs), targets);  // call guard.observe(name, output) in forward
//         optimizer.zero_grad();
//         loss.backward();
//         if (guard.endStep(loss, optimizer))
//             optimizer.step();
//     }
//
// Why this header names LibTorch's types without including LibTorch: core's public headers
// include no LibTorch (docs/architecture.md), and a training program that includes this header
// already includes torch/torch.h itself. So the types the calls take (at::Tensor, the modules, the
// optimizer) are forward-declared here, every LibTorch call lives behind a pimpl in Guard.cpp and the
// internal parts it calls (GuardReadback, GuardRunLog, GuardFiles, OptimizerSnapshot), and
// the header costs a user's translation unit nothing. A header-only facade would have put
// LibTorch back into a core header.
//
// Errors: the Guard runs inside the user's loop, where LibTorch itself reports misuse by
// exception, so misuse and failures throw GuardError (a std::runtime_error) whose message names
// the run file or the call and what is wrong: a loss that is not a single value, steps that do not
// increase, an optimizer the rollback does not know, run.h5 that cannot be written.

#include "core/record/CapturePolicy.h"
#include "core/record/DefencePolicy.h"
#include "core/run/RunFormat.h"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
class SequentialImpl;
} // namespace torch::nn
namespace torch::optim {
class Optimizer;
}
namespace torch::jit {
struct Module;
}

namespace nanscope {

class GuardError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

struct GuardOptions : DefenceOptions
{
    // ---- what is logged (docs/run-format.md names the tables)
    int64_t activationsEvery = 5; // /activations on the first step and every K steps (0: never)
    int64_t checkpointEvery = 50; // checkpoint N at beginStep every M steps (0: only incidents)
    // Also save batch N with every periodic checkpoint, so that ordinary steps replay too (the
    // demo runs do; a real data set makes this costly, so it is off).
    bool saveBatchWithCheckpoint = false;
    // /inputs holds the targets ("y") besides the inputs ("x").
    bool logTargets = true;
    std::string lossName; // cross_entropy, mse, nll, bce_with_logits: the loss replay uses
    std::string runName;  // default: the run directory's name
    std::string ampDtype = "none";
    std::map<std::string, std::string> attributes; // more root attributes (description, ...); they win

    // ---- incident capture: the checkpoint before the step and its batch, for replay
    // A step is an incident when its loss or gradients are not finite, or its loss or gradient
    // norm is more than spikeMads median absolute deviations above the median of the last
    // spikeWindow finite steps (0: non-finite steps only). Which incidents are captured is the
    // one policy of both recorders (core/record/CapturePolicy.h): the first non-finite step of a
    // run always; spikes and later non-finite steps up to their budgets (-1: every one). The
    // defaults are the table python/nanscope_recorder/capture_policy.json, which the Python
    // recorder reads too.
    double spikeMads = defaultSpikeMads();
    int64_t spikeWindow = defaultSpikeWindow();
    int spikeCaptures = CaptureBudget::defaults().spikeCaptures;
    int laterNonfiniteCaptures = CaptureBudget::defaults().laterNonfiniteCaptures;

    // ---- defences: skipNonfinite, rollbackAfter, rollbackLrFactor, snapshotEvery and
    // restoreBuffersOnSkip come from DefenceOptions (core/record/DefencePolicy.h), their one home.
    // Rollback knows torch::optim Adam, AdamW, SGD, RMSprop and Adagrad. With another optimizer
    // the Guard throws, unless this is set: then it warns (stderr and a note event) and trains on
    // without rollback.
    bool allowUnknownOptimizer = false;
};

// What endStep found, for a loop that wants to act on it (stop after a divergence, say).
struct GuardStepResult
{
    int64_t step = -1;
    double loss = 0;
    double gradNorm = 0;
    bool finite = true;     // loss and every gradient finite
    bool applied = true;    // what endStep returned
    bool spike = false;     // loss or gradient norm a spike by the spikeMads rule
    bool rolledBack = false;
};

class Guard
{
public:
    // A C++ module: checkpoints are torch::save archives of its parameters and buffers (tensor
    // statistics and diff in nanscope; no replay, which needs code to run).
    Guard(const std::string& runDirectory, torch::nn::Module& model, GuardOptions options = {});
    // A TorchScript module (torch::jit::load, or built from source as the demo runs are):
    // checkpoints are TorchScript archives, which nanscope replays op by op.
    Guard(const std::string& runDirectory, const torch::jit::Module& model, GuardOptions options = {});
    ~Guard(); // closes run.h5 (as close())
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    // Before the forward pass of global optimizer step `step` (increasing across epochs). Takes
    // the inputs' health and, every checkpointEvery steps, checkpoint N.
    void beginStep(int64_t step, const at::Tensor& inputs, const at::Tensor& targets);
    void beginStep(int64_t step, const at::Tensor& inputs);

    // LibTorch's C++ modules have no forward hooks, so activations are reported: call observe()
    // on a module's output inside forward (it returns the output unchanged). On steps that do not
    // log activations it costs a branch. `name` is the module's path (as named_modules() gives
    // it); `kind` its class name, found from the model when left empty.
    const at::Tensor& observe(const std::string& name, const at::Tensor& output, const std::string& kind = "");
    // Runs a Sequential child by child, observing each child's output (paths prefix + "0", "1", ...).
    at::Tensor forward(torch::nn::SequentialImpl& sequential, const at::Tensor& input, const std::string& prefix = "");
    bool activationsDue() const;

    // After backward, before optimizer.step(): logs the step and returns whether to apply it.
    // `scalars` are more /scalars columns (an evaluation loss, ...); their names are fixed by the
    // first step and must be given at every step. The loss must hold a single value.
    bool endStep(const at::Tensor& loss, torch::optim::Optimizer& optimizer,
                 const std::map<std::string, double>& scalars = {});

    // A `note` event at the current (or last) step.
    void note(const std::string& message);
    const GuardStepResult& lastStep() const;
    // The product of the rollback factors applied so far: a loop that sets the learning rate every
    // step (a schedule) multiplies its rate by this, or the schedule would undo the rollback's.
    double learningRateScale() const;
    const std::string& runDirectory() const;
    // run.h5's rows are written on a thread of their own (core/run/RunWriterThread.h), a moment
    // after endStep returns; flush() waits until every row and event logged so far is in run.h5.
    // endStep flushes by itself after a non-finite or captured step, and close() at the end. A
    // failed write throws GuardError from the next call that logs, flushes or closes.
    void flush();
    void close();

private:
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace nanscope
