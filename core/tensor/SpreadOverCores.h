#pragma once

#include <functional>

namespace nanscope {

// Runs `work` on `threads` threads at once: the calling thread and threads - 1 helpers, each helper
// pinned to a CPU other than the caller's (among those the process may use). `work` takes its
// items from a shared counter, so a helper that starts late only does less. Returns when every
// thread has returned from `work`.
//
// Why pinned: on the paravirtualised 2-vCPU machines nanscope is benchmarked on, Linux put a new
// thread (and a woken one) on its creator's CPU and ran it only once the creator blocked, 1.6 ms
// later, while the other CPU idled; a split of a millisecond's statistics ran one half after the
// other. Pinned, a helper started on the idle CPU within 0.25-0.6 ms.
void spreadOverCores(int threads, const std::function<void()>& work);

} // namespace nanscope
