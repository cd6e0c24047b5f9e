#pragma once

// What "blown up" means for a finite replay: the run's typical training loss and gradient norm
// before the step (the medians of their finite values), and a finite loss or gradient norm
// kBlowupFactor times those. Sudden blow-ups pass this before any NaN (a batch of 1e9 fill values
// in a float32 run). Triage judges a replay by it (Triage.h), and the sample bisection of both
// replay engines judges a subset of a batch by it, so that both call the same samples bad.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

class RunSource;

// A finite loss or gradient norm this many times the typical one counts as blown up.
inline constexpr double kBlowupFactor = 10.0;

struct BlowupBaseline
{
    std::optional<double> loss;     // median of the run's finite losses before the step
    std::optional<double> gradNorm; // median of its finite gradient norms before the step
};

// The medians over the rows before `step`; a series the run does not log stays empty.
BlowupBaseline blowupBaselineBefore(const std::vector<double>& steps, const std::vector<double>& losses,
                                    const std::vector<double>& gradNorms, int64_t step);
// The same, read from a run's /scalars (loss, grad_norm).
BlowupBaseline blowupBaselineBefore(const RunSource& run, int64_t step);

// A finite value above kBlowupFactor times its typical value (false when there is none).
bool lossBlewUp(double loss, const BlowupBaseline& baseline);
bool gradNormBlewUp(double gradNorm, const BlowupBaseline& baseline);

// What makes a sample bad under this baseline, for the replay's "Bad samples" line: "a non-finite
// value, a loss over 10x the run's typical (2.31) or a gradient norm over 10x its typical (0.81)".
std::string badSampleCriterionText(const BlowupBaseline& baseline);

} // namespace nanscope
