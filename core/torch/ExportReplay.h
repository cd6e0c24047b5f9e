#pragma once

// Replays one step on a torch.export archive (`.pt2`, torch.export.save): the exported graph runs
// op by op through LibTorch's dispatcher (ExportInterpreter), autograd on, with every op's tensors
// measured as it runs, then the loss and backward, as the TorchScript replay does (Replay.h) and
// into the same ReplayResult. Nothing in the file runs as code. replayStep (Replay.h) hands an
// archive of this kind here; this header is for the benchmark.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/replay/ReplayOptions.h"
#include "core/replay/ReplayTrace.h"

namespace nanscope {

Result<ReplayResult> replayExportedStep(const ReplayOptions& options, const ProgressCallback& progress = {});

// The same graph on the same batch with nothing measured: forward, loss and backward, as plain
// LibTorch runs it op by op. Milliseconds per run, over `repeats` runs after one warm-up; the
// benchmark's baseline for the instrumented replay.
Result<double> timePlainExportedStep(const ReplayOptions& options, int repeats);

} // namespace nanscope
