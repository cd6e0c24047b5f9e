// The texts of a blow-up (what core/scan/BlowupRule found, in BlowupFacts): its cause by what was
// seen first (the data, the weights, a growing module, the learning rate), and what to do.
#include "core/scan/Diagnosis.h"
#include "core/tensor/FloatLimits.h"

#include "core/run/LayerNames.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace nanscope::scan {

// The cause by what was seen first; the two instability signatures (a NaN written by one update,
// a module growing long before the failure) each have their own text.
Diagnosis diagnoseBlowupCause(const BlowupFacts& facts);
Diagnosis diagnoseNanFromUpdate(const BlowupFacts& facts);
Diagnosis diagnoseGrowthPrecursor(const BlowupFacts& facts);
std::string precursorWhat(const BlowupFacts& facts);

Diagnosis diagnoseBlowup(const BlowupFacts& facts)
{
    Diagnosis d = diagnoseBlowupCause(facts);
    if (facts.firstLayerUndetermined && facts.nonfiniteStep) {
        const std::string at = std::to_string(*facts.nonfiniteStep);
        const bool apart = facts.previousLoggedStep && *facts.previousLoggedStep < *facts.nonfiniteStep - 1;
        d.cause += " The first bad layer cannot be read from the logs: every parameter is already non-finite at "
                   "step " + at +
                   (apart ? ", the first bad logged row (the one before is step " +
                                std::to_string(*facts.previousLoggedStep) +
                                "), so the NaN had steps to spread through the updates in between"
                          : std::string(", all in the same update")) +
                   ".";
        d.suggestion += " To find the layer, replay the checkpoint before step " + at +
                        " with its batches (nanscope replay / triage), or log the per-layer tables every step "
                        "around it (the nanscope recorder logs the first non-finite step whatever its interval).";
    }
    return d;
}

Diagnosis diagnoseBlowupCause(const BlowupFacts& facts)
{
    if (facts.bornInWeights && !facts.input)
        return diagnoseNanFromUpdate(facts);
    if (!facts.precursor.empty() && !facts.input && !facts.learningRateClimb)
        return diagnoseGrowthPrecursor(facts);
    Diagnosis d;
    const std::string ratio = facts.jumpRatio ? numberText(*facts.jumpRatio, 2) : std::string("?");
    const std::string onset = std::to_string(facts.onsetStep);
    if (const auto& input = facts.input) {
        const std::string batch = "the input batch of step " + std::to_string(input->step) + " holds " +
                                  (input->nonfinite ? "NaN/Inf" : "extreme values") +
                                  (input->note.empty() ? "" : " (" + input->note + ")");
        if (facts.sudden) {
            d.cause = "Sudden blow-up at one batch: " + batch + "; the " + facts.series +
                      (facts.jumpRatio ? " jumped x" + ratio : std::string(" went non-finite at step " + onset)) +
                      " and the update destroyed the weights.";
        } else {
            // The same pattern as the table's: a climb that the batch ended, not one batch.
            const double slope = facts.growthDecadesPerStep.value_or(std::nan(""));
            d.cause = "Gradual blow-up: the " + facts.series + " grew for " +
                      std::to_string(facts.windowEndStep - facts.onsetStep) + " steps from step " + onset +
                      (slope > 0 ? ", x10 every " + numberText(1.0 / slope, 2) + " steps" : std::string()) +
                      (facts.nonfiniteStep ? ", until NaN at step " + std::to_string(*facts.nonfiniteStep) : "") +
                      "; " + batch + ", which the weights, already unstable, did not survive.";
        }
        d.suggestion = "Inspect that batch and fix or filter the records it came from; clip gradients "
                       "(clip_grad_norm_) so one batch cannot destroy the weights." +
                       std::string(facts.sudden || facts.constantLearningRate
                                       ? ""
                                       : " The climb before it says the learning rate was too high "
                                         "for this point of training as well.") +
                       input->batchNote;
    } else if (facts.nanInFirstSteps) {
        d.cause = "Non-finite from the first logged step (" + std::to_string(facts.firstLoggedStep) +
                  "): dirty data or a broken initialisation; there is no growth before it to see.";
        d.suggestion = "Check the first batches for NaN/Inf (torch.isfinite) and the model's initial weights before "
                       "training.";
    } else if (facts.sudden) {
        d.cause = "Sudden blow-up at one batch: the " + facts.series +
                  (facts.jumpRatio ? " jumped x" + ratio : std::string(" went non-finite")) + " at step " + onset +
                  " from a stable baseline" + (facts.firstLayer.empty() ? "" : ", first in " + facts.firstLayer) + ".";
        d.suggestion = "Inspect the batch of step " + onset +
                       " (save it and replay it with the checkpoint before it); clip gradients so one batch cannot "
                       "destroy the weights." +
                       facts.batchNote;
        if (facts.fp16)
            d.suggestion += " Under float16 AMP, check for overflow (values > " + float16MaxText() + "): compute the loss in fp32 and "
                            "check the GradScaler.";
    } else {
        const std::string lrNote = facts.learningRateRise ? "; the learning rate rose x" +
                                                                numberText(*facts.learningRateRise, 2) + " meanwhile"
                                                          : "";
        const double slope = facts.growthDecadesPerStep.value_or(std::nan(""));
        const std::string rate = slope > 0 ? ", x10 every " + numberText(1.0 / slope, 2) + " steps" : "";
        if (facts.lossClimb) {
            d.cause = "Gradual divergence: the loss rose x" + numberText(*facts.lossClimb, 2) +
                      (facts.paramNormClimb ? " and the parameter norm x" + numberText(*facts.paramNormClimb, 2)
                                            : std::string()) +
                      " over " + std::to_string(facts.windowEndStep - facts.onsetStep) + " steps from step " + onset +
                      ", while the logged " + facts.series + " rose only x" +
                      numberText(facts.primaryRise.value_or(1.0), 2) +
                      " (clipped, or flat: it does not show the climb)" + lrNote +
                      (facts.nonfiniteStep ? ", until NaN at step " + std::to_string(*facts.nonfiniteStep) : "") +
                      ". Not one bad batch: the updates themselves were too large for this point of training.";
            d.suggestion = "Lower the learning rate (or its schedule's peak) and resume from a checkpoint before step " +
                           onset + "; gradient clipping bounds each update's norm, not the learning rate times it, "
                           "so it cannot stop this climb. Watch the loss and the parameter norm, not the clipped "
                           "gradient norm.";
            return d;
        }
        if (facts.learningRateClimb) {
            d.cause = "Gradual blow-up driven by the learning rate: it climbed x" +
                      numberText(*facts.learningRateClimb, 2) + " from step " + onset +
                      " (a schedule that keeps growing, or a warm-up to too high a peak), and the " + facts.series +
                      " followed" +
                      (facts.jumpRatio ? ", x" + numberText(*facts.jumpRatio, 2) + " over its level there" : std::string()) +
                      (facts.precursor.empty()
                           ? std::string()
                           : "; it showed first in " + precursorWhat(facts) + ", which grew from " +
                                 numberText(facts.precursorBaseline, 3) + " to " + numberText(facts.precursorPeak, 3) +
                                 " from step " + std::to_string(facts.precursorOnsetStep)) +
                      (facts.nonfiniteStep ? ", until NaN at step " + std::to_string(*facts.nonfiniteStep) : "") +
                      ". Not one bad batch: every update grew with the learning rate until the weights could not "
                      "take it.";
            d.suggestion = "Fix the learning-rate schedule (its peak, or a growth that never stops) and resume from a "
                           "checkpoint before step " + onset + "; gradient clipping bounds each gradient, not the "
                           "learning rate times it, so it cannot stop this climb.";
            return d;
        }
        d.cause = "Gradient explosion: the " + facts.series + " grew for " +
                  std::to_string(facts.windowEndStep - facts.onsetStep) + " steps from step " + onset + rate + lrNote +
                  (facts.nonfiniteStep ? ", until NaN at step " + std::to_string(*facts.nonfiniteStep) : "") +
                  (facts.constantLearningRate
                       ? ". The learning rate was constant (" + numberText(*facts.constantLearningRate, 3) +
                             ") through it: no schedule grew too high; something in the model or the data grew."
                       : ". Learning rate too high for this point of training.");
        const std::string clip = "clip gradients (clip_grad_norm_ at a few times the baseline norm" +
                                 (facts.baseline ? " of " + numberText(*facts.baseline, 2) : std::string()) + ")";
        d.suggestion = facts.constantLearningRate
                           ? "Look for what grew inside the model before it (the Layer view's parameter norms and "
                             "activation ranges: a logit, a temperature, a log standard deviation) and bound it; " +
                                 clip + "; if nothing inside grew, lower the learning rate: a constant rate can "
                                        "still be too high once the loss surface sharpens. Resume from a checkpoint "
                                        "before step " + onset + "."
                           : "Lower the learning rate (or its schedule's peak), " + clip +
                                 ", and consider warm-up. Resume from a checkpoint before step " + onset + ".";
        if (facts.fp16)
            d.suggestion += " Under float16 AMP, keep the loss in fp32 and check the GradScaler.";
    }
    return d;
}

Diagnosis diagnoseNanFromUpdate(const BlowupFacts& facts)
{
    Diagnosis d;
    const std::string at = std::to_string(facts.nonfiniteStep.value_or(facts.onsetStep));
    const bool apart = facts.previousLoggedStep && facts.nonfiniteStep &&
                       *facts.previousLoggedStep < *facts.nonfiniteStep - 1;
    const std::string update =
        !facts.updateStep       ? "the optimizer update before step " + at
        : facts.updateStepExact ? "the optimizer update of step " + std::to_string(*facts.updateStep)
                                : "an optimizer update between steps " + std::to_string(*facts.updateStep) + " and " + at;
    d.cause = "NaN born in " + update + ": the weights of " + joinNames(facts.nanParameters, 4) +
              " are non-finite at step " + at + ", while the loss and gradient norm " +
              (facts.previousLoggedStep ? "of step " + std::to_string(*facts.previousLoggedStep) + " were"
                                        : std::string("before were")) +
              (facts.stableBefore ? " finite and stable" : " finite") +
              (facts.updateStep ? std::string(", and its weights finite") : std::string()) +
              (apart ? ": an update most likely wrote them, though a NaN from a forward pass at an unlogged step "
                       "spreads the same way"
                     : ": the update wrote them, not the forward pass") +
              ".";
    if (!facts.zeroGradientParameters.empty())
        d.cause += " The gradient of " + joinNames(facts.zeroGradientParameters, 4) + " at step " +
                   std::to_string(*facts.updateStep) +
                   " was exactly zero: an update that divides by the gradient's size computes 0/0 there (Adam "
                   "with eps=0 on a parameter that has had no gradient yet: a block just unfrozen behind a "
                   "zero-initialised layer; a gradient normalised by its own norm).";
    else
        d.cause += " Typical: a division 0/0 or by ~0 in the step (Adam with eps=0 and a zero gradient, a "
                   "gradient normalised by its own norm, a custom update rule).";
    d.cause += " What follows (NaN losses, poisoned normalisation statistics) is its consequence.";
    d.suggestion = "Check the optimizer step for divisions that can meet a zero gradient (an exactly-zero gradient "
                   "appears when a feature is missing from a batch, a unit is dead, or a block is unfrozen behind a "
                   "zero-initialised layer); keep Adam's eps > 0 (1e-8, or 1e-6 and above in float16/bfloat16); "
                   "guard normalisations with an eps. Resume from a checkpoint before step " +
                   std::to_string(facts.onsetStep) + ".";
    return d;
}

// The precursor in words: what it is a value of.
std::string precursorWhat(const BlowupFacts& facts)
{
    if (facts.precursorSource == "activations")
        return "the output of " + facts.precursor;
    if (facts.precursorSource == "layers/param_norm")
        return "the weights of " + facts.precursor;
    if (facts.precursorSource == "layers/grad_norm")
        return "the gradient of " + facts.precursor;
    return "the logged " + facts.precursor;
}

namespace {

// A log-scale precursor's kind and what of it was measured: a parameter's norm, a module output's
// largest magnitude (the recorder logs its range; a log-variance head falls, its magnitude grows).
std::string logScaleWhat(const BlowupFacts& facts)
{
    if (facts.precursorSource == "activations")
        return "output";
    return facts.precursorSource == "layers/param_norm" ? "parameter" : "quantity";
}

std::string logScaleMeasure(const BlowupFacts& facts)
{
    if (facts.precursorSource == "activations")
        return "its largest magnitude";
    return facts.precursorSource == "layers/param_norm" ? "its norm" : "it";
}

} // namespace

Diagnosis diagnoseGrowthPrecursor(const BlowupFacts& facts)
{
    Diagnosis d;
    const bool activation = facts.precursorSource == "activations";
    const double slope = facts.growthDecadesPerStep.value_or(std::nan(""));
    const std::string rate = slope > 0 ? ", x10 every " + numberText(1.0 / slope, 2) + " steps" : "";
    const int64_t end = facts.nonfiniteStep.value_or(facts.windowEndStep);
    // A log-scale parameter's norm grows by units, and exp() of it by that many e-folds.
    const std::string growth =
        !facts.precursorRoutedExperts.empty() && facts.precursorExpScaleDecades
            ? ", the router of " + facts.precursorRoutedExperts +
                  " (the logits of its softmax gate): its largest logit grew from " +
                  numberText(facts.precursorBaseline, 3) + " to " + numberText(facts.precursorPeak, 3) +
                  ", so exp() of it grew e^" + numberText(facts.precursorPeak - facts.precursorBaseline, 3) + " (x" +
                  numberText(std::pow(10.0, *facts.precursorExpScaleDecades), 2) + ")"
        : facts.precursorExpScaleDecades
            ? ", a log-scale " + logScaleWhat(facts) + " (exp() of it is what the model uses): " + logScaleMeasure(facts) +
                  " grew from " +
                  numberText(facts.precursorBaseline, 3) + " to " + numberText(facts.precursorPeak, 3) +
                  ", so the scale it stands for moved by e^" +
                  numberText(facts.precursorPeak - facts.precursorBaseline, 3) + " (x" +
                  numberText(std::pow(10.0, *facts.precursorExpScaleDecades), 2) + ")"
            : ": it grew from " + numberText(facts.precursorBaseline, 3) + " to " +
                  numberText(facts.precursorPeak, 3) + " (x" +
                  numberText(std::pow(10.0, facts.precursorRiseDecades), 2) + ")";
    // The primary series may have followed it (a policy's shrinking spread multiplies its gradients)
    // or shown nothing (a temperature climbing under a flat loss).
    const double followed = facts.primaryRiseSincePrecursor.value_or(1.0);
    const std::string primary = followed >= 10.0 ? ", and the " + facts.series + " followed it (x" +
                                                       numberText(followed, 2) + ")"
                                                 : ", while the " + facts.series + " showed little of it";
    const std::string held = facts.precursorHeldFromStep
                                 ? " (it reached " + numberText(facts.precursorPeak, 3) + " by step " +
                                       std::to_string(*facts.precursorHeldFromStep) + " and held there)"
                                 : std::string();
    d.cause = "Gradual blow-up that began in " + precursorWhat(facts) + growth + " over " +
              std::to_string(end - facts.onsetStep) + " steps from step " + std::to_string(facts.onsetStep) + held + rate +
              (facts.nonfiniteStep ? ", until NaN at step " + std::to_string(*facts.nonfiniteStep) : std::string()) +
              primary +
              (facts.learningRateRise && *facts.learningRateRise >= 3.0
                   ? "; the learning rate rose x" + numberText(*facts.learningRateRise, 2) + " meanwhile"
                   : std::string());
    if (facts.precursorLimit)
        d.cause += "; " + facts.precursorLimitText + ", and it reached " + numberText(facts.precursorPeak, 3);
    else if (facts.float16Overflow)
        d.cause += "; it reached the float16 limit (" + float16MaxText() + "), where softmax/exp overflow";
    d.cause += ". A drift, not one bad batch: the batch of the NaN step only crossed the line.";
    const auto named = [&](std::initializer_list<const char*> words) {
        return layernames::mentionsAny(facts.precursor, words);
    };
    // The advice by what the quantity is, read from its name (the run says no more).
    if (named({"router", "gate", "gating"}))
        d.suggestion = "A router whose logits keep growing: add a router z-loss (1e-3 * logsumexp^2, ST-MoE) and a "
                       "load-balancing loss, compute the router's softmax in float32, lower the router's learning "
                       "rate. ";
    else if (facts.precursorExpScaleDecades && !named({"logit_scale"}))
        d.suggestion = "A log-scale " + logScaleWhat(facts) +
                       " with nothing to bound it (a policy's log standard deviation, a log-variance head, SAC's "
                       "log alpha): clamp it (a log standard deviation to [-5, 2], say; a variance floored as "
                       "torch's gaussian_nll_loss floors it at eps), check the sign and weight of any entropy or KL "
                       "term that moves it, lower its learning rate, and compute exp() of it, and whatever divides "
                       "by it, in float32. ";
    else if (named({"lora", "adapter"}))
        d.suggestion = "An adapter whose output keeps growing while the loss sits at its floor: lower its learning "
                       "rate or its scaling (lora_alpha / r), add weight decay or dropout on it, and keep the "
                       "softmax/loss in float32. ";
    else if (named({"logit_scale", "temperature", "logits"}) && !named({"attn", "attention", "score", "qk"}))
        d.suggestion = "A learned temperature or logit scale with nothing to bound it: clamp it (CLIP clamps the "
                       "logit scale at 100), give it weight decay or a lower learning rate, and compute "
                       "softmax/cross-entropy with the library's log-softmax (it subtracts the maximum) in float32. ";
    else if (activation)
        d.suggestion = "If these are attention logits: normalise queries and keys (QK-norm / LayerNorm on q and k), "
                       "lower the learning rate (of the attention projections and any temperature parameter), "
                       "add a z-loss on the logits (1e-4 * logsumexp^2), or compute the softmax in float32. ";
    else
        d.suggestion = "Lower the learning rate of that parameter (or add weight decay / clamp it); ";
    // Logits can have their maximum subtracted; a log-scale quantity is exp()'d alone (said above).
    const bool logScale = facts.precursorExpScaleDecades && facts.precursorRoutedExperts.empty();
    if (facts.precursorLimit && !logScale)
        d.suggestion += "Whatever computes exp() of it must subtract the maximum first (logsumexp), or run in float32. ";
    d.suggestion += "Resume from a checkpoint before step " + std::to_string(facts.onsetStep) + ".";
    return d;
}

} // namespace nanscope::scan
