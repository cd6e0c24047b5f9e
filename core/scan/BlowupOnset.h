#pragma once

// How a blow-up began, for the blow-up rule (BlowupRule.cpp): a sudden jump read directly, a
// primary series stable up to the failure, the gradient norm's lead over the loss, a steady
// climb of the loss or the parameter norm under a clipped (or flat) gradient norm, and a learning
// rate that climbed up to a jump.

#include "core/scan/Onset.h"
#include "core/scan/ScanContext.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace nanscope::scan {

struct Jump
{
    size_t row = 0;
    double baseline = kNaN; // log10
};

// The sudden case, read directly: one step up by jump_decades (or into NaN) near the failure that
// stays up until `lastRow`, from a level that was still the baseline, and no rise began well before
// it (a gradual blow-up can end in a jump).
std::optional<Jump> suddenJump(const ScanContext& context, size_t windowBegin, size_t failureRow, size_t lastRow,
                               const Rise& rise);

// The primary series was at its level right up to the failure row.
bool stableUntil(const LogSeries& s, size_t windowBegin, size_t failureRow);

// Steps by which the gradient norm's rise toward the failure began before the loss's.
std::optional<int64_t> gradientLead(const ScanContext& context, size_t windowBegin, size_t failureRow);

struct Climb
{
    size_t fromRow = 0;
    double rise = 0; // decades
};

// A steady climb of `values` (raw, not log) from the window's lowest level up to the failure.
std::optional<Climb> steadyClimb(const std::vector<double>& values, size_t windowBegin, size_t failureRow);

// The loss (`loss`, the scalars' own) left its best level and sat `minDecades` or more above it
// right before `failureRow` (a median of nine rows, so not one spike), however the climb went
// (it accelerates when the learning rate keeps growing): its best row, where it left the best
// level (the last row within `nearBest` decades of it, on a median of nine rows around each) and
// how far it rose.
struct LossDivergence
{
    size_t bestRow = 0;
    Climb climb;
};
std::optional<LossDivergence> lossDivergence(const LogSeries& loss, size_t windowBegin, size_t failureRow,
                                             double minDecades, double nearBest);

// The logged learning rate climbed, row after row, up to `jumpRow` (a schedule that keeps
// growing, a warm-up to too high a peak): where the climb began and how far it rose. A jump of
// the gradient norm at its top is the end of a gradual climb in the step size, not one bad batch.
// Nothing when the learning rate is not logged, fell or stayed flat before the jump, or changed
// in one step (a step schedule).
std::optional<Climb> learningRateClimb(const RunScalars& scalars, size_t windowBegin, size_t jumpRow);

// The logged learning rate left its level (held or decaying) and rose row after row from there up
// to `endRow`, by kLrClimbDecades (x3.2) or more: where it left the level (its lowest row) and how
// far it rose. Nothing for a warm-up from the first steps or from before the window (no level
// before it), or a climb that stopped before `endRow`.
std::optional<Climb> learningRateClimbFromLevel(const RunScalars& scalars, size_t windowBegin, size_t endRow);

} // namespace nanscope::scan
