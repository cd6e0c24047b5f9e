#pragma once

#include "core/Progress.h"
#include "core/Result.h"

#include <cstdint>
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

struct ReplayOptions
{
    std::string checkpoint; // TorchScript archive: loading it runs code from the file
    std::string batch;      // torch.save dict {"inputs", "targets", "loss", "step"}
    std::string lossName;   // used when the batch names none ("cross_entropy", "mse", "nll", "bce_with_logits")
    std::string layerPrefix;// only ops of modules under this path are listed (all still run)
    std::string dtype = "float32"; // float16, bfloat16, float32, float64: precision what-if
    std::string device = "cpu";    // "cpu" or "cuda"
    bool eval = false;             // default: training mode, as the step ran
    bool bisect = false;           // find the samples that cause non-finite values
    bool backward = true;
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

// Replays one step: runs the checkpoint's forward on the batch with every intermediate tensor
// captured (the inlined forward graph, instrumented to return them all), computes the loss and
// back-propagates. The forward culprit is the first op whose output holds NaN or Inf while all
// its tensor inputs are finite; if every non-finite output has a non-finite input (a poisoned
// buffer, say), the first op with a non-finite output is reported, with its inputs.
// "1.13.1": the LibTorch nanscope was built with, for reports.
std::string libtorchVersion();

Result<ReplayResult> replayStep(const ReplayOptions& options, const ProgressCallback& progress = {});

} // namespace nanscope
