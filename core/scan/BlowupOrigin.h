#pragma once

// Where a blow-up's first NaN/Inf was born, for the blow-up rule (BlowupRule.cpp): in the forward
// pass (the weights it used were finite), or in the weights, written by an optimizer update from
// finite gradients (Adam with eps=0 on an exactly-zero gradient, a gradient normalised by its own
// norm). The second holds at any step, not only after a stable stretch: a block unfrozen into
// Adam with eps=0 at step 30, while the loss is still falling, writes NaN all the same.

#include "core/Result.h"
#include "core/scan/BlowupFailure.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanContext.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

struct OriginJudgement
{
    std::optional<NonfiniteOrigin> origin;  // absent when the run logs no parameter norms there
    std::vector<std::string> nanParameters; // non-finite at the failing row
    // Every logged parameter was non-finite at the first bad row: which went first cannot be read.
    bool everyParameter = false;
    // ... and logged rows apart: the NaN may also have come from an unlogged forward pass.
    bool spreadBetweenRows = false;
    // The weights went non-finite first, written by an update from finite gradients.
    bool bornInWeights = false;
    // The logged step whose update (or, rows apart, the updates after it) wrote them, when the
    // weights logged there were finite; `updateStepExact` when it is the step right before.
    std::optional<int64_t> updateStep;
    bool updateStepExact = false;
    // Of nanParameters, those whose gradient at updateStep was exactly zero (the 0/0 of an update
    // that divides by the gradient's size), and those whose gradient was non-finite.
    std::vector<std::string> zeroGradientParameters;
    bool stableBefore = true; // the primary series was at its level up to the failure
};

// `primaryRose`: the gradient norm (or loss) climbed toward the failure (a rise found before it).
Result<OriginJudgement> judgeNonfiniteOrigin(const ScanContext& context, const Failure& failure, size_t windowBegin,
                                             bool nanInput, bool primaryRose);

} // namespace nanscope::scan
