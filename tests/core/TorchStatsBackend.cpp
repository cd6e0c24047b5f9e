// The core tests check the LibTorch statistics path against the CPU kernel, so they install it the
// way the nanscope program does at start-up.
#include "core/torch/TorchTensorStats.h"

namespace {
const bool installed = [] {
    nanscope::torchstats::installStatsBackend();
    return true;
}();
} // namespace
