#pragma once

// What a replay is asked to do, and the facts about the replaying process that the programs which
// do not load LibTorch need too (the window, the report, `nanscope replay` before it hands over to
// nanscope-torch). Plain C++: core/torch/Replay.h runs a replay with these options.

#include "core/replay/BlowupBaseline.h"

#include <string>
#include <utility>
#include <vector>

namespace nanscope {

struct ReplayOptions
{
    std::string checkpoint; // TorchScript archive: loading it runs code from the file
    std::string batch;      // torch.save dict {"inputs", "targets", "loss", "step"}
    std::string lossName;   // used when the batch names none ("cross_entropy", "mse", "nll", "bce_with_logits")
    std::string layerPrefix;// only ops of modules under this path are listed (all still run)
    std::string dtype = "float32"; // float16, bfloat16, float32, float64: precision what-if
    // No --dtype given: an eager replay keeps each parameter's dtype as its checkpoint holds it (a
    // float16 model with float32 LoRA adapters over it); a TorchScript replay runs in `dtype`.
    bool dtypeChosen = true;
    std::string device = "cpu";    // "cpu" or "cuda"
    bool eval = false;             // default: training mode, as the step ran
    bool bisect = false;           // find the bad samples: non-finite values, or a blow-up (below)
    // The run's typical loss and gradient norm before the step: a subset of the batch whose finite
    // loss or gradient norm is kBlowupFactor times these is bad too (core/replay/BlowupBaseline,
    // the criterion triage judges a replay by).
    BlowupBaseline blowupBaseline;
    bool backward = true;
    // A wrapper's prefix on module paths ("base_model.model." of PEFT, run.h5's module_path_prefix):
    // taken off the module paths an exported program's graph names, so that they are the user's.
    std::string modulePathPrefix;
    // The autocast the run trained under (run.h5's amp_dtype: "float16", "bfloat16"; "" or "none"
    // for none). With no --dtype, the forward replays under it, as it trained.
    std::string ampDtype;
};

// "1.13.1": the LibTorch that nanscope-torch (the replaying program) was built with, for reports
// and Help > About. Known at build time, so saying it loads no LibTorch.
std::string libtorchVersion();

// For a process that only replays (`nanscope replay`), called once before replayStep: the memory
// a forward and backward free stays in the process for the next tensor, instead of glibc handing
// every block over 128 KiB back to the kernel and faulting it in again, zeroed, page by page. On
// bench_replay's CNN that costs two thirds of a plain forward and backward (60-80 ms against 20 ms)
// and more of the instrumented one, which holds more tensors at once. Never call it in a process
// that trains: its allocator is the user's.
void keepFreedMemoryForReuse();

// The same settings as environment variables glibc reads at start-up, for a child process that
// only replays and is not ours to call mallopt in (the eager replay's Python): name and value.
// A ResNet-18 forward and backward in Debian's Python torch, one thread: 343-363 ms without them,
// 127-128 ms with them.
std::vector<std::pair<std::string, std::string>> keepFreedMemoryEnvironment();

} // namespace nanscope
