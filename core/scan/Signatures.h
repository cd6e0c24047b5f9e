#pragma once

// Instability signatures the blow-up rule and the orchestrator add to incidents' evidence: the
// spike score of a series, the parameters non-finite at a step, and the precision headroom of a
// value. Where a blow-up's first NaN was born is core/scan/BlowupOrigin.h, how it began
// BlowupOnset.h, and its precursor Precursor.h.

#include "core/Result.h"
#include "core/scan/Incident.h"
#include "core/scan/RobustStats.h"
#include "core/scan/ScanConfig.h"
#include "core/scan/ScanInputs.h"

#include <cstddef>
#include "core/tensor/FloatLimits.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

// Per row: 1 where the series lies more than `sigmas` robust deviations (1.4826 MAD of log10)
// above the median of the finite rows of the preceding `windowSteps` steps, else 0. The median
// is refreshed every few rows, so a 100,000-row series costs a few million operations.
std::vector<uint8_t> spikeRows(const LogSeries& s, int64_t windowSteps = 1000, double sigmas = 7.0);
// Share of the finite rows before `endRow` that are spike rows; empty without finite rows.
std::optional<double> spikeShare(const LogSeries& s, const std::vector<uint8_t>& spikes, size_t endRow);

// The weights logged at `step` (/layers/param_norm): the parameters that are non-finite there.
// Empty optional when the run does not log parameter norms at that step.
Result<std::optional<std::vector<std::string>>> nonfiniteParametersAt(const ScanInputs& inputs, int64_t step);

// log10(limit / |peak|): decades left before a value overflows a format whose largest value is
// `limit`; <= 0 when it already did.
double headroomDecades(double peak, double limit);

// A value near float16's largest (core/tensor/FloatLimits.h, the replay's judgement too): the
// one "close to overflowing" the activation-growth rule warns on and a blow-up's diagnosis names
// as a float16 overflow.
inline bool nearFloat16Limit(double peak) { return nearFloat16LimitDecades(headroomDecades(peak, kFloat16Max)); }

} // namespace nanscope::scan
