#pragma once

// The earliest precursor of a blow-up: among the logged quantities inside the model (each
// module's output range, each parameter's norm, any other logged scalar such as a temperature or a
// router statistic; per-layer gradient norms are the primary series' and the layer blame's), the one whose sustained departure from its own baseline
// began first and went on right up to the failure. A drift inside the model that the loss does not
// show (a learned temperature, a LoRA adapter's output, a router's logits climbing for a thousand
// steps until an exp() overflows) is the start of a gradual blow-up, not the step where NaN appeared.

#include "core/Result.h"
#include "core/scan/ScanConfig.h"
#include "core/scan/ScanInputs.h"

#include <cstdint>
#include <optional>
#include <string>

namespace nanscope::scan {

// A numeric limit a quantity came near: the largest float16, or the input above which exp()
// overflows a precision. `what` says it in words ("exp() overflows float16 above 11.09").
struct NumericLimit
{
    double value = 0;
    std::string what;
};

// A quantity that departed from its baseline and kept going until the failure.
struct Precursor
{
    std::string name;   // module, parameter or scalar
    std::string source; // "activations", "layers/param_norm", "layers/grad_norm" or "scalars"
    int64_t onsetStep = 0;      // where the departure began (the knee of flat-then-rising)
    double baseline = 0;        // its level before the onset (raw units)
    double peak = 0;            // its largest finite value just before the failure
    double riseDecades = 0;     // log10(peak / baseline)
    double decadesPerStep = 0;  // Theil-Sen slope of log10 from onset to failure
    std::optional<NumericLimit> nearLimit; // the limit its peak came within reach of, if any
    // A log-scale quantity (logScaleQuantity), or a router's logits: how far exp() of it moved,
    // in decades, from its growth (e^(peak - baseline)); absent for any other quantity.
    std::optional<double> expScaleDecades;
    // For a router's output (routedExperts, ExpertLoad.h): the experts' container it routes for.
    std::string routedExperts;
    // Where it reached a numeric limit's reach, when it then held there until the failure rather
    // than climbing up to it: the account only where no quantity climbed up to the failure.
    std::optional<int64_t> heldFromStep;
};

// Which departures count: a climb from a flat level that lasted `minLeadSteps` or more and was
// still climbing at the failure, of `strongDecades` or more (for a log-scale parameter, of exp()
// of it); or of `minDecades` or more (less for
// one right under an exp() limit) when it is monotone and ended within reach of a numeric limit,
// which is what explains the failure. Ordinary learning moves quantities by a factor of a few.
// A router's logits are the one module output measured by what exp() makes of them (its gate is
// a softmax, and growing router logits are the instability ST-MoE's z-loss exists for: Zoph et
// al. 2022, "ST-MoE", section 3): a monotone climb of `minDecades` of exp() counts, as one into a
// numeric limit does.
struct PrecursorSearch
{
    int64_t windowBeginStep = 0;
    int64_t failureStep = 0;
    double minDecades = 0.5;
    double strongDecades = 2.0;
    int64_t minLeadSteps = 20;
};

// The earliest precursor over [windowBeginStep, failureStep); nothing when no quantity departed.
// Onsets within a few logged rows of each other tie; then one that came near a numeric limit wins,
// then a module output over a parameter norm over a gradient norm over another scalar, then the
// larger rise.
Result<std::optional<Precursor>> findPrecursor(const ScanInputs& inputs, const ScanConfig& config,
                                               const PrecursorSearch& search);

// The limit a module output of largest |x| = `peak` came within reach of, smallest first: exp()
// in float16 or float32 (within x1.3 below it, or x1.1 past it, where a sum with other terms fed
// the exp; further past it and finite, nothing took exp() of it in that precision), the float16
// maximum (nearFloat16Limit: within x16, or past it).
std::optional<NumericLimit> numericLimitNear(double peak);

// Whether a module or scalar name says exp() or softmax is taken of it, of what it scales or of
// what it is part of: logits, a model's head or classifier (and the adapters inside it), attention
// scores, a router's or gate's outputs, a temperature or logit scale.
bool takenExpOf(const std::string& name);

// Whether a parameter's, module output's or logged scalar's name says it is the logarithm of what
// the model uses (a policy's log standard deviation, a log-variance head, SAC's log alpha, CLIP's
// logit scale): exp() of it is the quantity, so a rise of its norm (or of the output's largest
// magnitude) from 1.5 to 13 is a change of e^11.5 (x1e5), not x8.7, and exp()'s limits bound it.
bool logScaleQuantity(const std::string& name);

} // namespace nanscope::scan
