#pragma once

// Which training step each loss-scale change of a DeepSpeed log belongs to (internal to
// TrainingTextLogReader).
//
// DeepSpeed prints an overflow ("Attempted loss scale: 65536, reducing to 32768") without a step
// number. What the log does count:
//   1. "step=N, skipped=K" every steps_per_print steps: the engine's global step, which counts
//      skipped steps too (the RM log: ten overflows, then "step=10, skipped=10"). So the overflows
//      printed between "step=P" and "step=N" belong to steps P+1..N, and K minus the previous K
//      says how many there were: that count is checked against the overflow lines.
//   2. With the fused fp16 optimizer, every rank also prints "Grad overflow on iteration I". Its
//      iteration counts optimizer steps from 0, skipped ones included, so iteration I is step I+1
//      (iterations 0..9 <-> "step=10, skipped=10"). When the distinct iterations match the overflow
//      lines one for one and each lands in its window, the steps are exact.
//   3. Otherwise the step within the window is estimated from the line's time stamp: counted back
//      from the report that closes the window at that window's own seconds per step, then kept
//      inside the window and one step apart (each overflow skips a step of its own). On the RM log
//      this gives the exact steps of (2) for every overflow after start-up.
//   4. The fused optimizer raises the scale after W steps without overflow ("No Grad overflow for
//      W iterations"): at step last_overflow + 1 + W*m. With exact overflow steps that is exact too.
// Without time stamps an overflow is put at the end of its window (after the last report: right
// after it); the notes say which of these applied.

#include "core/importers/ScalarLog.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::textlog {

constexpr double kNoTime = std::numeric_limits<double>::quiet_NaN();

// "step=N, skipped=K" (or a Megatron iteration line).
struct StepReport {
    int64_t step = 0;
    std::optional<int64_t> skippedTotal;
    double time = kNoTime; // seconds, from the line's time stamp
    size_t line = 0; // 1-based
};

struct ScaleChange {
    bool overflow = true; // false: an increase after a stable stretch
    size_t line = 0;
    double time = kNoTime;
    double before = 0; // the scale the step ran with ("Attempted loss scale") or raised from
    double after = 0; // the scale after it; == before when hysteresis kept it
    std::optional<int64_t> hysteresis; // "but hysteresis is 2": the scale was kept this time
    size_t reportsBefore = 0; // StepReports printed before this line: its window
    // Filled in by resolveSteps.
    int64_t step = 0;
    std::string stepBasis; // "" when exact, else how the step was worked out, for the event message
};

struct StepResolution {
    std::vector<std::string> warnings;
    std::vector<std::string> notes;
};

// Sets step (and stepBasis) on every change. overflowIterations: the distinct fused-optimizer
// iterations in the order first printed; scaleWindow: W of "No Grad overflow for W iterations", 0
// when not printed.
StepResolution resolveSteps(std::vector<ScaleChange>& changes, const std::vector<StepReport>& reports,
    const std::vector<int64_t>& overflowIterations, int64_t scaleWindow, const std::string& path);

// The skipped_step and loss_scale_decrease events and the "loss_scale" series of changes whose
// steps resolveSteps set, with notes on a start-up search and the lowest scale.
void addLossScaleHistory(const std::vector<ScaleChange>& changes, ScalarLog& log);

// One Megatron iteration line: the counts it gives for the iterations since the previous one.
struct MegatronInterval {
    int64_t previous = 0, iteration = 0, skipped = 0, nan = 0;
};

// Megatron's per-interval counts as events: nan iterations always, skipped iterations only with
// withSkips (DeepSpeed overflow lines, where a log has them, already made those events).
void addMegatronSkips(const std::vector<MegatronInterval>& intervals, bool withSkips, ScalarLog& log);

} // namespace nanscope::textlog
