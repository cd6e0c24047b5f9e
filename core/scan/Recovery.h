#pragma once

// The one judgement of whether training came back from a jump (a spike, a finite explosion, a
// non-finite burst): read on the loss, the quantity a user trains for. The loss came back when it
// returned within `recovery_decades` of its level before the jump and stayed finite and within that
// band afterwards, without being left at its level of the first steps and flat (a model that lost
// what it had learned). What stays changed after a recovery (a gradient norm that Adam-family
// optimizers keep x100 higher for a while, a new loss plateau) is what the jump left behind, not a
// continuing blow-up. The spike rule, the blow-up rule and the spike aftermath rule all ask here.

#include <cstddef>
#include <optional>

namespace nanscope::scan {

struct ScanContext;

enum class JumpOutcome
{
    Recovered,    // the loss came back into its band and stayed there
    NotRecovered, // the loss stayed above its band (or went non-finite, or lost all it had learned)
    LogEnded,     // too few rows after the jump to tell
    NoLossJump,   // the loss did not jump with it (or is not logged): judge the series itself
};

struct JumpRecovery
{
    JumpOutcome outcome = JumpOutcome::NoLossJump;
    // First row from which the loss is back in its band (Recovered only).
    size_t backRow = 0;
};

// The jump occupies scalar rows [firstRow, lastRow] (one row for a spike, the whole burst for a
// non-finite one); the loss must be finite after lastRow for it to recover.
JumpRecovery judgeRecovery(const ScanContext& context, size_t firstRow, size_t lastRow);

// The gradient norm once training came back (median of the rows from `backRow`) over its level
// before the jump at `firstRow`, when it is at least x10 higher: a level the jump left behind.
std::optional<double> gradientLevelLeftBehind(const ScanContext& context, size_t firstRow, size_t backRow);

// Shared with the blow-up rule's finite explosions (a loss up by this much for good, x1.6, ...).
constexpr double kDeadLossDecades = 0.2;
// ... and at or above 0.75 of its level at the start of training (log10 0.75): training lost.
constexpr double kLostTrainingDecades = -0.125;
// A loss that falls this much (x1.12) over the rows after it is still being trained.
constexpr double kStillLearningDecades = 0.05;

} // namespace nanscope::scan
