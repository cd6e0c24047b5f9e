#pragma once

// What the vanishing rule (VanishingRule.cpp) found, and the incidents it makes of it: which
// stretches of /layers/grad_norm were zero or far below the other layers, told apart as layers
// frozen for the whole run, layers that joined the loss later, experts a router starved, and layers
// whose gradient vanished.

#include "core/Result.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nanscope::scan {

struct ScanContext;

namespace vanishingrule {

// A layer's stretch of vanishing cells.
struct VanishedRun
{
    size_t layer;
    int64_t begin; // steps
    int64_t end;
    double zeroFraction;
};

// The incidents and notes of `vanished`, found over the first `rows` rows of /layers/grad_norm (of
// `available`: the rows past a blow-up are not read for vanishing, only looked at for whether a
// layer zero up to there trained after it).
Status reportVanished(ScanContext& context, const std::vector<VanishedRun>& vanished, int64_t rows, int64_t available);

} // namespace vanishingrule

} // namespace nanscope::scan
