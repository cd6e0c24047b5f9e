#pragma once

#include <functional>

namespace nanscope {

// Runs `work` on `threads` threads at once: the calling thread and threads - 1 helpers, each on a
// CPU other than the caller's (among those the process may use) while there are such CPUs. `work`
// takes its items from a shared counter, so a helper that starts late only does less. Returns when
// every thread has returned from `work`; an exception from the caller's share comes out after the
// helpers have finished theirs.
//
// The helpers are kept asleep between calls, one per CPU, each pinned to its CPU when it starts.
// On the paravirtualised 2-vCPU machines nanscope is benchmarked on:
// - Linux put a new or woken unpinned thread on its waker's CPU and ran it only once the waker
//   blocked, while the other CPU idled: a split of a millisecond's statistics ran one half after
//   the other;
// - a fresh thread pinned off the caller's CPU started 0.25-0.9 ms later, and the caller spent
//   most of that creating and pinning it before starting its own share;
// - a pinned helper woken from its wait joins in 0.1-0.2 ms, while the caller is already working.
// A call that finds the helpers busy (another thread's call, or one made from inside `work`) starts
// fresh pinned threads instead. A forked child starts helpers of its own: its parent's are not
// in it.
void spreadOverCores(int threads, const std::function<void()>& work);

} // namespace nanscope
