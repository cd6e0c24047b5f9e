#pragma once

#include "core/Progress.h"
#include "core/Result.h"
#include "core/replay/ReplayTrace.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

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


// Replays one step: runs the checkpoint's forward on the batch with every intermediate tensor
// captured (the inlined forward graph, instrumented to return them all), computes the loss and
// back-propagates. The forward culprit is the first op whose output holds NaN or Inf while all
// its tensor inputs are finite; if every non-finite output has a non-finite input (a poisoned
// buffer, say), the first op with a non-finite output is reported, with its inputs.
// "1.13.1": the LibTorch nanscope was built with, for reports.
std::string libtorchVersion();

Result<ReplayResult> replayStep(const ReplayOptions& options, const ProgressCallback& progress = {});

} // namespace nanscope
