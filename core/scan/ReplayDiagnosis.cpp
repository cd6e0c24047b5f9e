// The texts of the replay signatures (judged by core/replay/ReplaySignatures).
#include "core/scan/Diagnosis.h"
#include "core/tensor/FloatLimits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace nanscope::scan {


namespace {
std::string replayOpText(const ReplayOpName& op)
{
    return op.op + " (op #" + std::to_string(op.index) + ") in " + (op.module.empty() ? "the root module" : "'" + op.module + "'");
}
} // namespace

Diagnosis diagnoseReplayAttentionLogits(const AttentionLogitFacts& facts)
{
    Diagnosis d;
    d.cause = "Attention logits have grown: the softmax " + replayOpText(facts.softmax) + " reads logits up to |x| = " +
              numberText(facts.inputAbsmax) + " and its rows are near one-hot (entropy " + numberText(facts.entropy, 2) +
              " of at most " + numberText(facts.uniformEntropy, 3) + " nats)" +
              (facts.calls > 1 ? ", as in " + std::to_string(facts.calls - 1) + " more softmax call(s)" : std::string()) +
              ". Logits that keep growing collapse the attention entropy and then overflow a float16 softmax.";
    d.suggestion = "Normalise queries and keys (QK normalisation: a LayerNorm or RMSNorm on q and k before q·k), lower the "
                   "learning rate (or lengthen the warm-up), or add a z-loss on the logits to keep them near 0.";
    return d;
}

Diagnosis diagnoseReplayLossInLowPrecision(const LossPrecisionFacts& facts)
{
    Diagnosis d;
    d.cause = "The loss is computed in " + facts.dtype + ": the loss op " + replayOpText(facts.lossOp) + " reads " +
              facts.dtype + " values, where a log, an exp or a sum over a large batch overflows or loses the small "
              "differences the gradient is made of.";
    d.suggestion = "Compute the loss in float32: cast the logits with .float() before the loss (autocast does this for its "
                   "own loss functions, not for a loss written by hand inside forward).";
    return d;
}

Diagnosis diagnoseReplayFloat16Headroom(const Float16HeadroomFacts& facts)
{
    Diagnosis d;
    const std::string float16Max = float16MaxText();
    // Negative headroom is a value already past float16's range: say "beyond", never "within".
    const std::string where = facts.bits >= 0 ? numberText(facts.bits, 2) + " bits of headroom"
                                              : numberText(-facts.bits, 2) + " bits beyond it: Inf in float16";
    d.cause = std::to_string(facts.ops) + " op(s) come within " + numberText(facts.thresholdBits, 2) +
              " bits of float16's largest value (" + float16Max + ") or go past it; the first, " +
              replayOpText(facts.first) + ", reaches |x| = " + numberText(facts.absmax) + " (" + where + ")";
    if (facts.computedIn == "float16") {
        d.cause += "." + std::string(facts.bits >= 0 ? " In float16 these values overflow to Inf after little more growth." : "");
        d.suggestion = "Train these ops in bfloat16 or float32, or keep their values small: normalise before them, scale down "
                       "(attention by 1/sqrt(d)), lower the learning rate; with a loss scaler, watch its scale fall.";
        return d;
    }
    // The run computes these ops in a dtype that holds such values: precision is not the fault,
    // the size of the values is. Advising float32 to a float32 run misleads.
    d.cause += ", computed in " + facts.computedIn + ", whose range (to " + numberText(kBFloat16Max, 2) +
               ") holds it: this is no overflow of the run's precision, but values this large overflow float16.";
    d.suggestion = "Values this large come from the data or from weights that grow: look for fill values or outliers in the "
                   "batch (Find bad samples), normalise or clip the inputs, lower the learning rate; do not move these ops "
                   "to float16.";
    return d;
}

} // namespace nanscope::scan
