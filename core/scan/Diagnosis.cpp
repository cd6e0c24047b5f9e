#include "core/scan/Diagnosis.h"
#include "core/tensor/FloatLimits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace nanscope::scan {

void applyDiagnosis(Incident& incident, Diagnosis diagnosis)
{
    incident.cause = std::move(diagnosis.cause);
    incident.suggestion = std::move(diagnosis.suggestion);
}

std::string joinNames(const std::vector<std::string>& names, size_t limit)
{
    std::string out;
    for (size_t i = 0; i < names.size() && i < limit; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > limit)
        out += " and " + std::to_string(names.size() - limit) + " more";
    return out;
}

std::string savedBatchNote(const RunInfo& info, int64_t step)
{
    auto batch = info.batches.find(step);
    if (batch == info.batches.end())
        return "";
    std::string note = " The batch of step " + std::to_string(step) + " was saved (batches/" +
                       batch->second.substr(batch->second.find_last_of('/') + 1) + ")";
    // Replay runs batch N through checkpoint N and nothing else (RunInfo::replayableSteps): suggest
    // it only where that pair exists.
    const auto replayable = info.replayableSteps();
    if (std::binary_search(replayable.begin(), replayable.end(), step))
        note += "; replay it: nanscope replay RUN_DIR --step " + std::to_string(step);
    else if (info.checkpoints.count(step))
        note += ", but it cannot be replayed: " + info.whyNotReplayable(step);
    else
        note += ", but no checkpoint of that step, so it cannot be replayed (replay needs both at the same step)";
    return note + ".";
}

Diagnosis diagnoseBadInput(const BadInputFacts& facts)
{
    Diagnosis d;
    const std::string where = facts.batches == 1 ? "the input batch of step " + std::to_string(facts.onsetStep)
                                                 : std::to_string(facts.batches) + " input batches from step " +
                                                       std::to_string(facts.onsetStep);
    if (facts.nonfinite)
        d.cause = where + " holds NaN or Inf (" + joinNames(facts.inputs) + "): dirty data.";
    else
        d.cause = where + " holds extreme values (" + joinNames(facts.inputs) + "; " + facts.note + ").";
    if (facts.inFirstBatch)
        d.cause += " It is already in the first batch: the data itself is dirty.";
    d.suggestion = "Inspect that batch and the records it came from; validate inputs in the data loader "
                   "(torch.isfinite, range checks) and drop or repair bad records." +
                   facts.batchNote;
    return d;
}

Diagnosis diagnoseBufferCorruption(const BufferFacts& facts)
{
    Diagnosis d;
    const char* what = facts.fault == BufferFault::Nonfinite  ? "became non-finite (NaN/Inf)"
                       : facts.fault == BufferFault::Negative ? "went negative (running_var < 0)"
                                                              : nullptr;
    d.cause =
        "Running statistics of " + joinNames(facts.layers) + " " +
        (what ? std::string(what) : "collapsed to ~0 (running_var <= " + numberText(facts.varianceFloor) + ")") +
        " at step " + std::to_string(facts.onsetStep) + ".";
    if (facts.fault != BufferFault::Nonfinite) {
        d.suggestion = "A collapsed or negative running variance divides by ~eps in evaluation. Check for constant "
                       "or dead channels feeding the layer, raise its eps, and reset the running statistics.";
        return d;
    }
    if (facts.nonfiniteToEnd)
        d.cause += " They stay non-finite to the end of the log: every evaluation-mode forward pass through them "
                   "gives NaN.";
    if (facts.evalOnlyNanCount)
        d.cause += " The training loss stays finite while the evaluation loss is NaN (" +
                   std::to_string(*facts.evalOnlyNanCount) +
                   " evaluations): NaN in eval while training is fine is BatchNorm running statistics.";
    if (facts.nanInputStep)
        d.cause += " The input batch of step " + std::to_string(*facts.nanInputStep) +
                   " held NaN or Inf: the training-mode forward pass folded it into the running statistics before the "
                   "step was skipped.";
    else if (facts.onsetStepSkipped)
        d.cause += " That step was skipped, but the forward pass had already updated the running statistics.";
    d.suggestion = "Restore the normalisation buffers from a checkpoint before step " +
                   std::to_string(facts.onsetStep) +
                   " or reset them (reset_running_stats()) and re-estimate them on clean batches. Skipping the "
                   "optimizer step is not enough: check inputs and activations before the forward pass, or save "
                   "and restore the buffers when a step is skipped.";
    return d;
}

Diagnosis diagnoseDivergence(const DivergenceFacts& facts)
{
    Diagnosis d;
    const std::string onset = std::to_string(facts.onsetStep);
    d.cause = "The training loss diverged without NaN: from its best level (" + numberText(facts.bestLevel, 3) +
              " around step " + std::to_string(facts.bestStep) + ") it climbed from step " + onset + " to " +
              numberText(facts.endLevel, 3) + " (x" + numberText(facts.endLevel / facts.bestLevel, 2) +
              ") and is still there at step " + std::to_string(facts.endStep) + ".";
    if (facts.learningRateRise) {
        d.cause += " The learning rate rose x" + numberText(*facts.learningRateRise, 2) +
                   " meanwhile: too high for this point of training.";
        d.suggestion = "Lower the learning rate (or its schedule's peak) and resume from a checkpoint before step " +
                       onset + "; clipping gradients does not stop a climb the step size itself causes.";
    } else {
        d.cause += " A learning rate too high for this point of training, or data that changed from there on.";
        d.suggestion = "Resume from a checkpoint before step " + onset +
                       " with a lower learning rate; if the learning rate did not change, compare the batches "
                       "before and after that step (a new data shard, a curriculum stage, corrupted records)." +
                       facts.batchNote;
    }
    return d;
}

std::string consequenceOfNanWeightsNote(int64_t step)
{
    return "A consequence, not the cause: the optimizer update before step " + std::to_string(step) +
           " wrote NaN into the weights (blowup at step " + std::to_string(step) +
           ", born in the parameters), and the forward pass through them wrote it into these statistics; fix the "
           "update, and restore the buffers with the weights.";
}

Diagnosis diagnoseNonfiniteMetric(const NonfiniteMetricFacts& facts)
{
    Diagnosis d;
    const std::string what = facts.nan ? "NaN" : "infinite";
    const std::string where =
        facts.nonfinite == facts.values
            ? "on every one of its " + std::to_string(facts.values) + " logged values"
            : "on " + std::to_string(facts.nonfinite) + " of its " + std::to_string(facts.values) + " logged values" +
                  (facts.nonfinite == 1 ? ", at step " + std::to_string(facts.firstStep)
                                        : ", from step " + std::to_string(facts.firstStep) + " to " +
                                              std::to_string(facts.lastStep));
    d.cause = "The logged metric '" + facts.metric + "' (/" + facts.table + ") is " + what + " " + where +
              ", while the training loss is finite there: the metric, not the training, is broken there.";
    d.suggestion = "Check how '" + facts.metric +
                   "' is computed at those steps: over an empty set or a single class (an AUC of one label), a "
                   "division by a zero count, or a value that overflowed. It matters to training only if it feeds "
                   "back: a scheduler or early stopping on a NaN metric (ReduceLROnPlateau never reduces on NaN).";
    return d;
}

Diagnosis diagnoseNonfiniteBurst(const NonfiniteBurstFacts& facts)
{
    Diagnosis d;
    const std::string at = facts.count == 1
                               ? "at step " + std::to_string(facts.firstStep)
                               : "on " + std::to_string(facts.count) + " steps from " +
                                     std::to_string(facts.firstStep) + " to " + std::to_string(facts.lastStep);
    // "Recovered" only where rows after the burst show it; a log that ends on the burst shows nothing.
    d.cause = "Non-finite loss " + at + (facts.skippedByTraining ? ", skipped by the training," : "") +
              (facts.logEndsAtBurst ? " where the log ends: whether training went on is not seen."
                                    : " and training recovered.");
    if (facts.loggedAsZero)
        d.cause += " The log says 0.0 there, which is not the loss: transformers' Trainer writes 0.0 in place of a "
                   "NaN or Inf loss (logging_nan_inf_filter, on by default).";
    if (facts.lossFinite && !facts.nanInput && facts.lossJump >= kExtremeBatchLossJump) {
        d.cause = "Non-finite gradient norm " + at + " with the loss x" + numberText(facts.lossJump, 2) +
                  " its recent median: one extreme batch." +
                  (facts.logEndsAtBurst ? std::string(" The log ends there.")
                                        : std::string(" Training recovered at once, so its update was skipped (a NaN "
                                                      "update would have stayed in the weights)."));
        d.suggestion = "Inspect the batch of step " + std::to_string(facts.firstStep) +
                       " (outlier records, label noise, an unusually long sequence); clip gradients so such a batch "
                       "cannot move the weights far." +
                       facts.batchNote;
    } else if (facts.lossFinite && !facts.nanInput) {
        // What mixed-precision training logs when the GradScaler (or DeepSpeed's loss scaler) finds
        // inf/NaN gradients: the step is skipped and the scale lowered; the loss itself is finite.
        d.cause = "Non-finite gradient norm " + at + " while the loss stayed finite, and training went on: a "
                  "mixed-precision step whose scaled gradients overflowed, which the loss scaler skipped" +
                  (facts.inFirstBatch ? " while searching its starting scale (normal in the first steps)" : "") +
                  ". Harmless while rare.";
        d.suggestion = "Nothing to do if it stays rare. If it recurs, check the loss scale (it should settle) and "
                       "look for a layer whose gradients overflow float16; bf16 has float32's range." +
                       facts.batchNote;
    } else if (facts.nanInput) {
        d.cause += " The input batch held NaN/Inf: dirty data.";
        d.suggestion = "Validate batches in the data loader (torch.isfinite) and fix the records." + facts.batchNote;
    } else if (facts.inFirstBatch) {
        d.cause += " It happened in the first batch: dirty data or a broken initialisation.";
        d.suggestion = "Check the first batches and the initial weights for NaN/Inf." + facts.batchNote;
    } else if (!facts.origin.empty() && facts.originInputFinite) {
        d.cause += " One layer only: the output of " + facts.origin +
                   (facts.originKind.empty() ? "" : " (" + facts.originKind + ")") +
                   " went non-finite while its input was finite, so an operation inside it (division by zero, "
                   "log(0), sqrt of a negative) produced the NaN.";
        d.suggestion = "Guard that operation in " + facts.origin +
                       ": add an eps to divisors and clamp log/sqrt arguments, sized for the dtype (1e-8 vanishes in "
                       "fp16; use 1e-5 or more there, or compute it in fp32)." +
                       facts.batchNote;
    } else if (facts.fp16) {
        d.cause += " Sporadic NaN under float16 AMP: fp16 overflow (values above " + float16MaxText() + ").";
        d.suggestion = "Compute the loss (and softmax/log-sum-exp) in fp32 and check that the GradScaler skips these "
                       "steps and lowers its scale." +
                       facts.batchNote;
    } else {
        if (!facts.origin.empty())
            d.cause += " First non-finite output: " + facts.origin + ".";
        else if (facts.activationsFiniteAtFirstStep)
            d.cause += " Every module output logged at step " + std::to_string(facts.firstStep) +
                       " was finite: the NaN arose after them, in the loss or in forward's own code outside any "
                       "module (a division of a masked sum, say).";
        else if (facts.gradientsNonfinite)
            d.cause += " The gradients went non-finite; activations were not logged at that step, so the layer that "
                       "produced it is not known.";
        d.suggestion = "Replay that step's batch with the checkpoint before it to find the operation; log "
                       "activations at every step around it." +
                       facts.batchNote;
    }
    return d;
}

// How a recovered spike reads, until its aftermath shows a trace (addSpikeAftermath).
constexpr const char* kAbsorbedReading = ": one unusual batch, or an outlier the optimiser absorbed.";
constexpr const char* kTraceReading =
    ", but not without a trace: one huge update moved the weights (a learning rate that jumped for a step, "
    "or a batch far outside the data).";

Diagnosis diagnoseSpike(const SpikeFacts& facts)
{
    Diagnosis d;
    const std::string step = std::to_string(facts.onsetStep);
    d.cause = "An isolated jump (x" + numberText(facts.jumpRatio, 2) + " the running median) in " + facts.series +
              " at step " + step +
              (facts.recovered ? std::string(" that recovered") + kAbsorbedReading
                               : std::string("; the log ends before it could recover."));
    d.suggestion = "Inspect the batch of step " + step +
                   "; gradient clipping keeps such batches from moving the weights far." + facts.batchNote;
    return d;
}

Diagnosis diagnoseLossScaleCollapse(const std::string& cascade)
{
    Diagnosis d;
    d.cause = "The AMP loss scale fell in a cascade (" + cascade +
              "): every step overflows in fp16, so the scaler keeps halving and skipping. Something produces Inf/NaN "
              "regardless of the scale: fp16 overflow in the forward pass, or a real NaN.";
    d.suggestion = "Compute the loss (and softmax, norms, exp) in fp32, look for activations above " + float16MaxText() + " or a NaN "
                   "source (replay one of those steps), check the GradScaler settings (init_scale, "
                   "growth_interval), or train in bfloat16.";
    return d;
}

Diagnosis diagnoseOptimizerReset(const OptimizerResetFacts& facts)
{
    Diagnosis d;
    const std::string at = std::to_string(facts.step);
    d.cause = "Optimizer state lost at step " + at + ": the optimizer's own count of its updates (optimizer_step) " +
              (facts.countBefore ? "fell from " + std::to_string(*facts.countBefore) +
                                       " to 0 there while the training's step went on"
                                 : "is 0 at this run's first logged step, where the training's step is " + at +
                                       ": it went on from there with a fresh optimizer") +
              ". Its running averages (Adam's moments of the gradient and its square) started from zero with it, "
              "so its first updates move every weight by about the whole learning rate, whatever the gradient's "
              "size. Typical of a resume that loaded the weights but not the optimizer's state" +
              (facts.lossRise && *facts.lossRise >= 1.5
                   ? "; the loss rose x" + numberText(*facts.lossRise, 2) + " over its level in the steps right after it"
                   : std::string()) +
              ".";
    d.suggestion = "Resume with the optimizer's state (optimizer.load_state_dict; the Trainer's checkpoint-N/"
                   "optimizer.pt, Lightning's ckpt_path); where it is gone, warm the learning rate up again from a "
                   "small value after the resume (a few hundred steps).";
    return d;
}

Diagnosis diagnoseSkippedSteps(const SkippedStepsFacts& facts)
{
    Diagnosis d;
    d.cause = std::to_string(facts.count) + " consecutive optimizer steps skipped from step " +
              std::to_string(facts.firstStep) +
              (facts.toEnd ? " to the end of the log: training has stopped learning."
                           : " to " + std::to_string(facts.lastStep) + ".");
    d.suggestion = "Find why the training skips them (non-finite gradients, an AMP overflow, a guard in the loop); "
                   "replay one of those steps." +
                   facts.batchNote;
    return d;
}

Diagnosis diagnoseFrozen(const std::vector<std::string>& layers, size_t count)
{
    Diagnosis d;
    d.cause = std::to_string(count) + " parameter(s) have a zero or negligible gradient for the whole run (" +
              joinNames(layers) +
              "): frozen, unused in forward, detached from the loss, or without effect on it (a bias right before "
              "a normalisation layer).";
    d.suggestion = "If they should train, check requires_grad, that forward uses them, and that nothing detaches "
                   "them (.detach(), torch.no_grad, .data); a bias before BatchNorm can be dropped (bias=False).";
    return d;
}

Diagnosis diagnoseVanishing(const VanishingFacts& facts)
{
    Diagnosis d;
    d.cause = "Vanishing gradients: " + joinNames(facts.layers) + (facts.count > 1 ? " have" : " has") +
              " a gradient norm " +
              (facts.zeroFraction > 0.5
                   ? std::string("of zero")
                   : "over " + numberText(facts.decades) + " orders of magnitude below the other layers") +
              " from step " + std::to_string(facts.onsetStep) + " to " + std::to_string(facts.endStep) + ".";
    d.suggestion = "Look for dead activations (ReLU units stuck at zero), saturated sigmoid/tanh, a learning rate "
                   "that collapsed, or too deep a stack without residuals or normalisation; check the layer's "
                   "activations around the onset.";
    return d;
}

Diagnosis diagnoseExpertCollapse(const VanishingFacts& facts, const std::vector<std::string>& experts)
{
    Diagnosis d;
    d.cause = "Router load collapse: " + joinNames(experts) + (experts.size() > 1 ? " receive" : " receives") +
              " no gradient from step " + std::to_string(facts.onsetStep) + " to " + std::to_string(facts.endStep) +
              " while the other experts train: the router stopped sending tokens to " +
              (experts.size() > 1 ? "them" : "it") +
              ". Not vanishing gradients: a starved expert has nothing to learn from, and the router's logits "
              "usually grow as it concentrates the load.";
    d.suggestion = "Add or raise the load-balancing loss (Switch Transformer's auxiliary loss, ~0.01) and a router "
                   "z-loss, set a capacity factor, add noise or jitter to the router; watch the router's logits "
                   "and the tokens per expert.";
    return d;
}

Diagnosis diagnoseEvaluationNonfinite(const EvaluationFacts& facts)
{
    Diagnosis d;
    const bool every = facts.nonfinite == facts.evaluationsSince;
    d.cause = "The evaluation loss is non-finite on " + std::to_string(facts.nonfinite) + " of " +
              std::to_string(facts.evaluations) + " evaluations, " + (every ? "every one " : "") + "from step " +
              std::to_string(facts.firstStep) + (every && facts.toEnd ? " to the end" : "") + ", while " +
              (facts.trainingLogged ? "the training loss stays finite: training is not blowing up, evaluation is broken"
                                    : "no training loss is logged, so only evaluation can be judged") +
              ".";
    d.suggestion = "Check the evaluation batches: labels all masked (-100) make the mean loss 0/0; an empty or "
                   "padded-only batch does the same. Then check evaluation precision (float16 evaluation overflows "
                   "where bf16/fp32 training does not) and normalisation layers in eval() mode (poisoned running "
                   "statistics).";
    return d;
}

Diagnosis diagnoseNonfiniteParameters(const NonfiniteParameterFacts& facts)
{
    Diagnosis d;
    d.cause = "The weights hold NaN/Inf at step " + std::to_string(facts.firstStep) + " (" +
              numberText(facts.count) + " elements in " + std::to_string(facts.layers.size()) + " of " +
              std::to_string(facts.parameterCount) + " parameters: " + joinNames(facts.layers, 4) + ")" +
              (facts.previousStep >= 0 ? ", finite at step " + std::to_string(facts.previousStep)
                                       : ", from the first checkpoint read") +
              ": an update between the two wrote them, and every forward pass from then on computes NaN.";
    d.suggestion = "Resume from the checkpoint at step " +
                   (facts.previousStep >= 0 ? std::to_string(facts.previousStep) : std::string("before it")) +
                   " with gradient clipping and a lower learning rate; if the training log is at hand, open it "
                   "with the checkpoints (its loss and gradient norm say whether it blew up or one batch did it).";
    return d;
}

Diagnosis diagnoseDamagedData(const DamagedDataFacts& facts)
{
    Diagnosis d;
    d.cause = "The run file holds " + std::to_string(facts.count) +
              " values no training can produce (a norm, count or rate below zero) in " +
              joinNames(facts.places, facts.places.size()) +
              ": run.h5 is damaged there, and those steps show the damage, not the training.";
    d.suggestion = "Restore run.h5 from a copy if there is one; read the incidents at these steps with care. Recorders "
                   "of this nanscope write a checksum per chunk, so a new recording reports such damage as an error.";
    return d;
}

Diagnosis diagnoseActivationGrowth(const ActivationGrowthFacts& facts)
{
    Diagnosis d;
    const bool overflowed = facts.float16HeadroomDecades <= 0;
    // A rise within one logged step is a jump, not a growth rate.
    const bool oneStep = facts.peakStep <= facts.onsetStep + 1;
    d.cause = "The output of " + facts.module +
              (oneStep ? " jumped from " + numberText(facts.baseline, 2) + " to " + numberText(facts.peak, 2) +
                             " at step " + std::to_string(facts.peakStep)
                       : " grew from " + numberText(facts.baseline, 2) + " to " + numberText(facts.peak, 2) +
                             " between steps " + std::to_string(facts.onsetStep) + " and " +
                             std::to_string(facts.peakStep) +
                             (facts.decadesPerStep > 0
                                  ? " (x10 every " + numberText(1.0 / facts.decadesPerStep, 2) + " steps)"
                                  : std::string())) +
              (overflowed ? ": it passed the float16 maximum (" + float16MaxText() + ")"
                          : ": " + numberText(facts.float16HeadroomDecades, 2) +
                                " decades below the float16 maximum (" + float16MaxText() + ")") +
              (facts.looksLikeAttention ? "; attention logits this large make softmax one-hot and overflow in float16"
                                        : "") +
              ".";
    d.suggestion = facts.looksLikeAttention
                       ? "Attention logits growing: normalise queries and keys (QK-norm), lower the learning rate, "
                         "add a z-loss (1e-4 * logsumexp(logits)^2), and keep the softmax in float32 under AMP."
                       : "Check what drives this growth (learning rate, a scale or temperature parameter, missing "
                         "normalisation); keep that op in float32 under AMP or normalise its input.";
    return d;
}

void addSpikeAftermath(Diagnosis& d, const SpikeAftermathFacts& facts)
{
    // Only a loss left higher is a trace: a lower one is training going on (a warm-up ending), and a
    // skipped update changed no weight, so what the loss does later is not its doing.
    const bool plateauMoved = facts.lossPlateauRatio && *facts.lossPlateauRatio >= 1.5 && !facts.updateSkipped;
    // What it left behind says it was no outlier the optimiser absorbed.
    if (!facts.deadAfter.empty() || plateauMoved)
        if (const size_t at = d.cause.find(kAbsorbedReading); at != std::string::npos)
            d.cause.replace(at, std::strlen(kAbsorbedReading), kTraceReading);
    if (!facts.deadAfter.empty())
        d.cause += " It left " + joinNames(facts.deadAfter, 4) +
                   " dead: their gradient is exactly zero on every step from it on (non-zero before), the "
                   "signature of ReLU units pushed below zero for every input by one huge update.";
    if (plateauMoved)
        d.cause += " The loss settled x" + numberText(*facts.lossPlateauRatio, 2) +
                   " of its level before the spike: the model did not come back to where it was.";
    if (facts.gradientLevelRatio)
        d.cause += " The loss came back, but the gradient norm stayed x" + numberText(*facts.gradientLevelRatio, 2) +
                   " above its level before: an adaptive optimizer (Adam, RMSprop, Adagrad) whose second-moment "
                   "estimate the huge gradients inflated takes many steps to settle; a level left behind, not a "
                   "blow-up.";
    if (!facts.deadAfter.empty())
        d.suggestion += " Dead ReLU after a spike: clip gradients (clip_grad_norm_), use a learning-rate warm-up "
                        "and check the schedule for one-step jumps, or use LeakyReLU/GELU; re-initialise or resume "
                        "from a checkpoint before step " +
                        std::to_string(facts.spikeStep) + ".";
}

Diagnosis diagnoseAdamEpsilon(const AdamEpsilonFacts& facts)
{
    Diagnosis d;
    d.cause = numberText(100.0 * facts.share, 3) + "% of the optimizer's elements have sqrt(v_hat) <= eps" +
              (facts.eps ? " (eps = " + numberText(*facts.eps, 2) + ")" : std::string()) + " at step " +
              std::to_string(facts.step) + " (" + facts.file + "), most in " + joinNames(facts.parameters, 4) +
              ": there Adam's step is lr * m / eps, no longer normalised; the update shrinks with the gradient "
              "(an eps too large for these gradients stalls them; one too small, or 0, divides by ~0).";
    d.suggestion = "Size eps to the gradients: lower it when it stalls training (1e-8 is the usual value for float32), "
                   "raise it when sqrt(v_hat) is ~0 in float16/bfloat16 (1e-6 or more) and never use eps=0, which "
                   "turns a zero gradient into 0/0 = NaN.";
    return d;
}

} // namespace nanscope::scan
