#include "core/tensor/SpreadOverCores.h"

#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace nanscope {

namespace {

// The CPUs this process may run on, but the one the calling thread is on now.
std::vector<int> cpusOtherThanCallers()
{
    std::vector<int> others;
#ifdef __linux__
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return others;
    const int mine = sched_getcpu();
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed) && cpu != mine)
            others.push_back(cpu);
#endif
    return others;
}

void pinTo(std::thread& thread, int cpu)
{
#ifdef __linux__
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    // A failure (a cpuset changed meanwhile) leaves the helper where the scheduler put it.
    pthread_setaffinity_np(thread.native_handle(), sizeof one, &one);
#else
    (void)thread;
    (void)cpu;
#endif
}

} // namespace

void spreadOverCores(int threads, const std::function<void()>& work)
{
    std::vector<std::thread> helpers;
    if (threads > 1) {
        const std::vector<int> others = cpusOtherThanCallers();
        for (int k = 1; k < threads; ++k) {
            helpers.emplace_back(work);
            if (!others.empty())
                pinTo(helpers.back(), others[size_t(k - 1) % others.size()]);
        }
    }
    work();
    for (auto& helper : helpers)
        helper.join();
}

} // namespace nanscope
