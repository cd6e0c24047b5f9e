#pragma once

// The scan's rules, one per file. Each reads the inputs and what earlier rules left in the
// context, appends its incidents to context.report and writes the shared facts it owns (see
// ScanContext). An error is a failed read; a cancelled scan sets context.cancelled.

#include "core/Result.h"
#include "core/scan/ScanContext.h"

#include <vector>

namespace nanscope::scan {

using ScanRule = Status (*)(ScanContext&);

// The rules in the order the scan runs them (RunRules.cpp says why this order), by name: what
// bench_scan times one by one, so that docs/scan.md can say what each rule costs.
struct NamedRule
{
    const char* name;
    ScanRule run;
};
std::vector<NamedRule> rulesInOrder();

// Input batches with NaN/Inf or values far beyond the input's usual range (BadInput).
Status detectBadInputs(ScanContext& context);
// Normalisation running statistics non-finite, negative or collapsed (BnCorruption).
Status detectBatchNormCorruption(ScanContext& context);
// Non-finite bursts the training recovered from (NonfiniteLoss), then the blow-up (Blowup).
Status detectNonfiniteAndBlowup(ScanContext& context);
// Isolated jumps of the gradient norm or loss that recover (Spike).
Status detectSpikes(ScanContext& context);
// AMP loss scale halving step after step (LossScaleCollapse).
Status detectLossScaleCollapse(ScanContext& context);
// Long runs of skipped optimizer steps no other incident explains (SkippedSteps).
Status detectSkippedSteps(ScanContext& context);
// Values no training can produce, read as damage to the file (DamagedData).
Status detectDamagedValues(ScanContext& context);
// The evaluation loss non-finite while training is finite or not logged (EvalNonfinite).
Status detectEvaluationNonfinite(ScanContext& context);
// A logged metric (an AUC, an accuracy) NaN or Inf where the training loss is finite (NonfiniteMetric).
Status detectNonfiniteMetrics(ScanContext& context);
// Parameters holding NaN/Inf (a run read from checkpoints), when no blow-up explains it
// (NonfiniteParameters).
Status detectNonfiniteParameters(ScanContext& context);
// Layers whose gradient is zero or far below the others (Vanishing); streams /layers/grad_norm.
Status detectVanishing(ScanContext& context);
// Starts streaming /layers/grad_norm for the vanishing rule on a thread of its own, so that the
// largest read of the scan overlaps the rules before it (run before the first rule).
void startVanishingStream(ScanContext& context);
// Tells that stream where the vanishing rule will stop (before a blow-up's onset), once the blow-up
// rule has decided it: the rows after it are then never read.
void limitVanishingStream(ScanContext& context);
// Waits until that stream has read every row it may. For tests: the vanishing rule then takes the
// path where the blow-up rule's limit comes after the stream has passed it.
void waitForVanishingStream(ScanContext& context);

// A module's output range grown by orders of magnitude to near the float16 limit, in a run that has
// not blown up (ActivationGrowth); streams /activations.
Status detectActivationGrowth(ScanContext& context);
// What recovered spikes and bursts left behind: dead parameters, a changed loss plateau (adds to
// their incidents); streams /layers/grad_norm after the largest spikes.
Status detectSpikeAftermath(ScanContext& context);
// A finite loss that climbed away from its best level and stayed up, in a run with no blow-up
// (Blowup, gradual): the slow divergence before, or instead of, a NaN.
Status detectDivergence(ScanContext& context);
// Adam's eps dominating a large share of elements, from optimizer states the caller read (AdamEpsilon).
Status detectAdamEpsilon(ScanContext& context);
// The optimizer's count of its updates (optimizer_step) started again at 0 while the training went
// on: its state was lost (OptimizerResetRule.cpp).
Status detectOptimizerReset(ScanContext& context);

} // namespace nanscope::scan
