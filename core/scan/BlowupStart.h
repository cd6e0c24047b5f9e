#pragma once

// How a blow-up began, decided once for the blow-up rule (BlowupRule.cpp): the window it is judged
// in, its onset and baseline, sudden or gradual, and what the start was read off: a jump of the
// primary series, a NaN born in an optimizer update, a precursor inside the model, a steady climb
// of the loss under a clipped gradient norm, or a learning rate that climbed up to the jump.

#include "core/Result.h"
#include "core/scan/BlowupFailure.h"
#include "core/scan/BlowupOnset.h"
#include "core/scan/BlowupOrigin.h"
#include "core/scan/Onset.h"
#include "core/scan/Precursor.h"
#include "core/scan/ScanContext.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace nanscope::scan {

struct BlowupStart
{
    size_t windowBegin = 0; // the first row looked at (not past an earlier burst)
    size_t lastRow = 0;     // the last row of the explosion
    Rise rise;              // the primary series' onset as findOnset reads it
    size_t onsetRow = 0;
    int64_t onsetStep = 0;  // the precursor's own onset step when there is one
    double baseline = kNaN; // log10, of the series the growth is measured on
    bool sudden = false;
    // A bad input batch at the onset, and whether it held NaN/Inf itself.
    const Incident* blamedInput = nullptr;
    bool nanInput = false;
    OriginJudgement born;                  // where the first NaN was, as BlowupOrigin judged it
    std::optional<NonfiniteOrigin> origin; // what the incident says (reset when a growth came first)
    bool bornInWeights = false;            // one optimizer update wrote it (after the precursor check)
    std::optional<Precursor> precursor;
    // A steady climb of the loss (and the parameter norm) under a clipped or flat gradient norm,
    // the gradient norm's own rise over it, and whether the growth is measured on the loss.
    std::optional<Climb> lossClimb, paramClimb;
    std::optional<double> primaryRise;
    bool measuredOnLoss = false;
    // The learning rate climbed up to the jump, or left its level and rose up to the failure
    // before the primary series or a precursor showed the growth (the onset is then its own).
    std::optional<Climb> lrClimb;
};

Result<BlowupStart> judgeBlowupStart(const ScanContext& context, const Failure& failure);

} // namespace nanscope::scan
