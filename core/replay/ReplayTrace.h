#pragma once

// What a replay found, as plain values, declared once: computed by core/torch/Replay (in the child
// process `nanscope replay` runs), carried as JSON (app/ReplayJson) and shown as they are by the
// replay pane and the report. No LibTorch here.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// Statistics of one tensor value (never the tensor itself).
struct ValueStats
{
    std::vector<int64_t> shape;
    std::string dtype;
    int64_t numel = 0;
    double min = 0, max = 0, mean = 0, std = 0; // over finite elements; NaN when none is finite
    double absmax = 0;
    int64_t nan = 0, posinf = 0, neginf = 0;

    bool defined() const { return !dtype.empty(); }
    bool finite() const { return nan == 0 && posinf == 0 && neginf == 0; }
};

// One op of the inlined forward graph, in execution order.
struct ReplayOp
{
    int index = 0;
    std::string op;     // "aten::div"
    std::string module; // "norm", "body.0"; "" for the root module
    std::string source; // "model.py:42" (user's code), or "<torchscript>:N" without a file name
    std::string code;   // that source line's text, trimmed: "return (x - mean) / std"
    std::vector<ValueStats> inputs; // tensor inputs, in argument order
    ValueStats output;              // the first tensor output
    ValueStats grad;                // gradient of that output, after backward
    std::string gradFunction;       // autograd node that produced `output` ("DivBackward0")
};

struct ParameterGrad
{
    std::string name;
    ValueStats value;
    ValueStats grad;
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

// How every view writes a value: its finite range ("[-2.383, 2.82]", "no finite value", "-" for no
// value) and, when any element is not finite, its counts ("NaN 16, +Inf 0, -Inf 0"; else "").
inline std::string finiteRangeText(const ValueStats& v)
{
    if (!v.defined())
        return "-";
    if (!(v.min == v.min)) // NaN: no element is finite
        return "no finite value";
    char text[64];
    std::snprintf(text, sizeof text, "[%.4g, %.4g]", v.min, v.max);
    return text;
}

inline std::string nonfiniteCountsText(const ValueStats& v)
{
    if (!v.defined() || v.finite())
        return "";
    return "NaN " + std::to_string(v.nan) + ", +Inf " + std::to_string(v.posinf) + ", -Inf " + std::to_string(v.neginf);
}

} // namespace nanscope
