#pragma once

// What a replay found, as plain values, declared once: computed by core/torch/Replay (in the child
// process `nanscope replay` runs), carried as JSON (app/ReplayJson) and shown as they are by the
// replay pane and the report. No LibTorch here.
//
// A replayed value's statistics are a TensorStats (core/tensor), by the one statistics kernel. A
// value can be absent (an op input that is a constant, a gradient backward never reached), so it
// is a std::optional<TensorStats>: empty means "no tensor", never "a tensor of zeros".

#include "core/tensor/TensorStats.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// One op of the inlined forward graph, in execution order.
struct ReplayOp
{
    int index = 0;
    std::string op;     // "aten::div"
    std::string module; // "norm", "body.0"; "" for the root module
    std::string source; // "model.py:42" (user's code), or "<torchscript>:N" without a file name
    std::string code;   // that source line's text, trimmed: "return (x - mean) / std"
    std::vector<std::optional<TensorStats>> inputs; // tensor inputs, in argument order
    std::optional<TensorStats> output;              // the first tensor output
    std::optional<TensorStats> grad;                // gradient of that output, after backward
    std::string gradFunction;                       // autograd node that produced `output` ("DivBackward0")
};

struct ParameterGrad
{
    std::string name;
    std::optional<TensorStats> value;
    std::optional<TensorStats> grad; // empty when backward gave the parameter no gradient
};

struct ReplayResult
{
    int64_t step = -1;
    double loss = 0;
    bool lossFinite = true;
    std::string lossName;
    std::vector<ReplayOp> ops;                 // after the layer filter
    std::optional<ReplayOp> firstNonfinite;    // forward culprit (see replayStep)
    std::optional<ReplayOp> firstNonfiniteGrad;// first non-finite gradient in backward order
    std::vector<ParameterGrad> params;
    bool bisected = false;
    std::vector<int64_t> badSamples;
    std::vector<std::string> notes; // what the replay had to assume or could not do
    double instrumentedMs = 0;      // instrumented forward + loss + backward + statistics
};

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
