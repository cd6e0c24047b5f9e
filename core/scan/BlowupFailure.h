#pragma once

// Where a run's primary series (the gradient norm, else the loss) failed, for the blow-up rule
// (BlowupRule.cpp): bursts of non-finite rows and whether the training recovered from each, a
// finite explosion that destroyed the weights, and a rise of blow-up size that did not come back.

#include "core/scan/ScanContext.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

// Non-finite rows no more than burst_gap_steps apart.
struct Burst
{
    size_t firstRow = 0;
    size_t lastRow = 0;
    int64_t count = 0;
};

// Where a blow-up failed, as the searches below found it.
struct Failure
{
    size_t row = 0;         // the first non-finite row, or where the finite rise crossed halfway
    bool nonfinite = false; // it ended in NaN/Inf (not a finite rise)
    Severity severity = Severity::Critical;
    std::string note;
    // The last row of the explosion, when it is neither the failure row nor the end of the log.
    std::optional<size_t> lastRow;
};

std::vector<Burst> nonfiniteBursts(const ScanContext& context);

// Typical primary level before a row: median of the previous finite values (log10).
double levelBefore(const ScanContext& context, size_t row);

// The training came back from the burst: the primary series (or, where it stays high, the loss)
// returned to its level within recovery_rows, or the training itself skipped the steps.
bool recoveredAfter(const ScanContext& context, const Burst& burst);

// A NaN that comes at the end of a finite explosion is that explosion's failure, even when the
// numbers look finite again afterwards: the weights it left behind are destroyed.
bool explodedBefore(const ScanContext& context, const Burst& burst);

// A finite explosion of blow-up size after which the gradient norm looks normal again but the loss
// never comes back: the update destroyed the weights (dead units, a collapsed output).
std::optional<Failure> destroyedByExplosion(const ScanContext& context);

// No NaN, but a rise of orders of magnitude that does not come back, or one still going on at the
// end of a run being written (or cut short).
std::optional<Failure> finiteRise(const ScanContext& context);

} // namespace nanscope::scan
