#pragma once

// What a replay found, as plain values, declared once: computed by core/torch/Replay (in the child
// process `nanscope replay` runs), carried as JSON (app/codecs/ReplayJson) and shown as they are by the
// replay pane and the report. No LibTorch here.
//
// A replayed value's statistics are a TensorStats (core/tensor), by the one statistics kernel. A
// value can be absent (an op input that is a constant, a gradient backward never reached), so it
// is a std::optional<TensorStats>: empty means "no tensor", never "a tensor of zeros".

#include "core/tensor/FloatLimits.h"
#include "core/tensor/TensorStats.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// How close a value comes to overflowing, as bits of headroom: log2(limit / max|x|), so 1 bit
// left means a value half the largest number; 0 or less means it overflows there. And the value's
// dynamic range, log2(max|x| / smallest nonzero |x|): float16 holds about 40 bits of it with its
// subnormals, 30 without. Each is empty when the value has no finite nonzero element, or is not a
// floating-point tensor.
struct PrecisionHeadroom
{
    std::optional<double> float16Bits, bfloat16Bits;
    std::optional<double> dynamicRangeBits;
};

inline bool isFloatingPoint(DType dtype)
{
    return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

// From the kernel's statistics of the value (absmax, nonzeroAbsmin): no pass of its own.
inline PrecisionHeadroom precisionHeadroomOf(const std::optional<TensorStats>& value)
{
    PrecisionHeadroom headroom;
    if (!value || !isFloatingPoint(value->dtype) || !value->nonzeroAbsmin || !(value->absmax > 0))
        return headroom;
    headroom.float16Bits = std::log2(kFloat16Max / value->absmax);
    headroom.bfloat16Bits = std::log2(kBFloat16Max / value->absmax);
    headroom.dynamicRangeBits = std::log2(value->absmax / *value->nonzeroAbsmin);
    return headroom;
}

// What one softmax (or log_softmax) call did. Attention logits that grow show here before they
// overflow: max |input| climbs, and the entropy of the output falls toward 0 (every row one-hot).
struct SoftmaxSignature
{
    double inputAbsmax = 0;        // max |x| over the finite elements of its input
    std::optional<double> entropy; // nats: mean over the rows of -sum p log p along the softmax dim;
                                   // empty when no row is finite
    double uniformEntropy = 0;     // log(n) for rows of n entries: the entropy of a uniform row
};

// One op of the inlined forward graph, in execution order.
struct ReplayOp
{
    int index = 0;
    std::string op;     // "aten::div"
    std::string module; // "norm", "body.0"; "" for the root module
    std::string source; // "model.py:42" (user's code), or "<torchscript>:N" without a file name
    std::string code;   // that source line's text, trimmed: "return (x - mean) / std"
    int iteration = -1; // for an op inside a loop body: which run of it (0, 1, ...); -1 elsewhere
    // False for a value computed from constants and weights alone, never from the batch (a causal
    // mask of finfo.min, a position table): precision findings are about the data, not masks.
    bool fromData = true;
    std::vector<std::optional<TensorStats>> inputs; // tensor inputs, in argument order
    std::optional<TensorStats> output;              // the first tensor output
    std::optional<TensorStats> grad;                // gradient of that output, after backward
    std::string gradFunction;                       // autograd node that produced `output` ("DivBackward0")
    PrecisionHeadroom headroom;                     // of `output`
    std::optional<SoftmaxSignature> softmax;        // softmax and log_softmax ops only
};

struct ParameterGrad
{
    std::string name;
    std::optional<TensorStats> value;
    std::optional<TensorStats> grad; // empty when backward gave the parameter no gradient
};

// Where the loss the replay back-propagated from came from.
enum class LossConvention {
    None,      // no loss: the batch has no targets and forward returned no loss (backward skipped)
    NamedLoss, // nanscope computed the named loss (cross_entropy, ...) of forward's output and the batch's targets
    InForward, // the model's forward took the targets and returned the loss (the Hugging Face convention)
};
// "none", "named_loss", "in_forward": the JSON spelling.
inline const char* lossConventionKey(LossConvention convention)
{
    switch (convention) {
    case LossConvention::NamedLoss: return "named_loss";
    case LossConvention::InForward: return "in_forward";
    case LossConvention::None: break;
    }
    return "none";
}
inline LossConvention lossConventionFromKey(const std::string& key)
{
    if (key == "named_loss")
        return LossConvention::NamedLoss;
    if (key == "in_forward")
        return LossConvention::InForward;
    return LossConvention::None;
}

// Output-logit divergence: log Z = logsumexp over the last dim of the final logits (forward's
// output under a named loss; the logits the model returned, or the input of its cross-entropy or
// softmax, under a loss in forward), over the rows whose log Z is finite. A log Z that drifts far
// from 0 is what z-loss penalises; its growth comes before a softmax overflows.
struct LogitsSignature
{
    std::string from;  // "forward's output", "forward's 'logits'", "input of aten::cross_entropy_loss"
    int opIndex = -1;  // the op whose output the logits are, -1 when they are not an op's
    int64_t rows = 0;  // rows with a finite log Z
    std::optional<double> logZMean, logZMin, logZMax; // empty when no row is finite
};

// What the replay's signatures amount to, with the cause and the suggestion (their texts live in
// core/scan/Diagnosis, judged by core/replay/ReplaySignatures).
enum class ReplaySignal {
    AttentionLogits,   // a softmax over large logits, its output near one-hot
    LossInLowPrecision,// the loss op read float16 (or bfloat16) values
    Float16Headroom,   // ops whose output comes within a few bits of float16's largest value
};
inline const char* replaySignalKey(ReplaySignal signal)
{
    switch (signal) {
    case ReplaySignal::AttentionLogits: return "attention_logits";
    case ReplaySignal::LossInLowPrecision: return "loss_in_low_precision";
    case ReplaySignal::Float16Headroom: return "float16_headroom";
    }
    return "";
}
inline std::optional<ReplaySignal> replaySignalFromKey(const std::string& key)
{
    for (ReplaySignal signal : {ReplaySignal::AttentionLogits, ReplaySignal::LossInLowPrecision, ReplaySignal::Float16Headroom})
        if (key == replaySignalKey(signal))
            return signal;
    return std::nullopt;
}

struct ReplayFinding
{
    ReplaySignal signal = ReplaySignal::Float16Headroom;
    int opIndex = -1;       // the op it is about (the first, when several are)
    std::string cause;      // with what was measured
    std::string suggestion;
};

struct ReplayResult
{
    int64_t step = -1;
    // The dtype the replay ran in when it is not ReplayOptions::dtype: an eager replay that kept the
    // checkpoint's own dtypes says the one most parameters hold ("float16"). Empty otherwise.
    std::string dtype;
    double loss = 0;
    bool lossFinite = true;
    std::string lossName;       // the named loss; empty under a loss in forward
    LossConvention lossConvention = LossConvention::None;
    std::string lossFrom;       // where the loss came from, in words: "cross_entropy(output, targets)", "forward(x, labels)['loss']"
    std::optional<ReplayOp> lossOp; // the op whose output is the loss (a loss in forward only), with its inputs
    std::vector<ReplayOp> ops;                 // after the layer filter
    std::optional<ReplayOp> firstNonfinite;    // forward culprit (see replayStep)
    std::optional<ReplayOp> firstNonfiniteGrad;// first non-finite gradient in backward order
    // Backward culprit: the first op, in backward order, whose output's gradient is finite while a
    // gradient it passes to an input is not (log(0) behind a torch.where: finite forward, NaN backward).
    std::optional<ReplayOp> gradCulprit;
    std::vector<ParameterGrad> params;
    std::optional<LogitsSignature> logits;
    std::vector<ReplayFinding> findings;
    bool bisected = false;
    std::vector<int64_t> badSamples;
    std::string badSampleCriterion; // what made a sample bad (badSampleCriterionText), when bisected
    std::vector<std::string> notes; // what the replay had to assume or could not do
    double instrumentedMs = 0;      // instrumented forward + loss + backward + statistics
};

// What a replay's forward pass found, as every view says it: an op made the first non-finite
// value; or none did, though the loss is not finite (a part of the forward the replay could not
// see: never "the forward pass is finite" next to a NaN loss); or the forward is finite.
enum class ForwardVerdict { NonfiniteOp, NonfiniteLossUnseen, Finite };
inline ForwardVerdict forwardVerdict(const ReplayResult& r)
{
    if (r.firstNonfinite)
        return ForwardVerdict::NonfiniteOp;
    if (r.lossConvention != LossConvention::None && !std::isfinite(r.loss))
        return ForwardVerdict::NonfiniteLossUnseen;
    return ForwardVerdict::Finite;
}
inline const char* kNonfiniteLossUnseenText =
    "The loss is not finite, but no op the replay saw produced a non-finite value: the loss came "
    "from outside the ops it captured.";

// True when the value is there and holds a NaN or an Inf; an absent value (a constant input, no
// gradient) holds none.
inline bool hasNonfinite(const std::optional<TensorStats>& value)
{
    return value && value->nonfinite() > 0;
}

// How every view writes a value: its finite range ("[-2.383, 2.82]", "no finite value", "empty" for
// a tensor of no element, "-" for no value) and, when any element is not finite, its counts
// ("NaN 16, +Inf 0, -Inf 0"; else "").
inline std::string finiteRangeText(const std::optional<TensorStats>& value)
{
    if (!value)
        return "-";
    if (value->numel == 0)
        return "empty";
    if (!value->min)
        return "no finite value";
    char text[64];
    std::snprintf(text, sizeof text, "[%.4g, %.4g]", *value->min, *value->max);
    return text;
}

inline std::string nonfiniteCountsText(const std::optional<TensorStats>& value)
{
    if (!hasNonfinite(value))
        return "";
    return "NaN " + std::to_string(value->nan) + ", +Inf " + std::to_string(value->posinf) + ", -Inf " +
           std::to_string(value->neginf);
}

} // namespace nanscope
