#pragma once

// What the C++ Guard does about a step whose loss or gradient norm is not finite: skip the update,
// roll back to the last good snapshot after a streak of such steps, put the normalisation layers'
// running statistics back, and when to take the next snapshot. LibTorch-free, so that the decision
// is tested alone (tests/core/DefencePolicyTest.cpp); core/torch/Guard.cpp carries it out.

#include "core/run/RunFormat.h"

#include <cstdint>
#include <optional>

namespace nanscope {

// The defences' options, once: the C++ Guard's options are these and more (GuardOptions derives
// from this), and the defaults are the Python recorder's (python/nanscope_recorder/run_format.json,
// "recorder_defaults"). Off by default except skip.
struct DefenceOptions
{
    // A non-finite step's update is not applied: the Guard's endStep returns false for it, with
    // its gradients zeroed and a skipped_step event.
    bool skipNonfinite = true;
    // After this many non-finite steps in a row, put back the weights, buffers and optimizer state
    // of the last good snapshot and scale every learning rate by rollbackLrFactor (0: never).
    int rollbackAfter = 0;
    double rollbackLrFactor = runformat::recorderdefaults::kRollbackLrFactor;
    // A good step's state is kept in memory at most every this many steps (the rollback target).
    int64_t snapshotEvery = runformat::recorderdefaults::kSnapshotEvery;
    // On a skipped step, put BatchNorm running statistics back to their values before its forward,
    // so that a skipped step's forward leaves no trace in the buffers.
    bool restoreBuffersOnSkip = false;
};

class DefencePolicy
{
public:
    DefencePolicy() = default;
    explicit DefencePolicy(DefenceOptions options) : m_options(options) {}

    struct Plan
    {
        bool skip = false;        // the update is not applied
        bool tryRollback = false; // roll back now (it may find no snapshot yet)
    };
    // A step's verdict, finite or not; `rollbackUsable` when the optimizer allows a rollback. A
    // finite step ends a streak of non-finite ones.
    Plan planStep(bool finite, bool rollbackUsable);

    struct Outcome
    {
        bool apply = true;           // the optimizer applies the step's update
        bool restoreBuffers = false; // put the running statistics back to their values before the forward
        bool zeroGradients = false;  // the update is dropped: nothing of it may reach the weights
    };
    // After the rollback was tried (or not): a rollback ends the streak and drops the update; a
    // skipped step without one puts the buffers back when there is a snapshot of them.
    Outcome settle(const Plan& plan, bool rolledBack, bool haveBufferSnapshot);

    // A finite step takes a snapshot when none was taken yet or the last is snapshotEvery old.
    bool snapshotDue(bool finite, bool rollbackUsable, std::optional<int64_t> lastSnapshotStep, int64_t step) const;

    int badStreak() const { return m_badStreak; }

private:
    DefenceOptions m_options;
    int m_badStreak = 0;
};

} // namespace nanscope
