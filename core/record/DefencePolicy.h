#pragma once

// What the C++ Guard does about a step whose loss or gradient norm is not finite: skip the update,
// roll back to the last good snapshot after a streak of such steps, put the normalisation layers'
// running statistics back, and when to take the next snapshot. LibTorch-free, so that the decision
// is tested alone (tests/core/DefencePolicyTest.cpp); core/torch/Guard.cpp carries it out.

#include <cstdint>
#include <optional>

namespace nanscope {

struct DefenceOptions
{
    bool skipNonfinite = true;        // a non-finite step's update is not applied
    int rollbackAfter = 0;            // this many non-finite steps in a row roll back (0: never)
    int64_t snapshotEvery = 0;        // steps between good snapshots (what a rollback returns to)
    bool restoreBuffersOnSkip = false; // a skipped step's forward leaves no trace in the buffers
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
