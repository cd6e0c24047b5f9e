#include "core/tensor/SpreadOverCores.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif
#include <unistd.h>

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

// Fresh helpers, pinned: for a call that finds the pool busy (another thread's statistics, or
// work that spreads again from inside a helper).
void spreadOverFreshThreads(int threads, const std::function<void()>& work)
{
    std::vector<std::thread> helpers;
    const std::vector<int> others = cpusOtherThanCallers();
    for (int k = 1; k < threads; ++k) {
        helpers.emplace_back(work);
        if (!others.empty())
            pinTo(helpers.back(), others[size_t(k - 1) % others.size()]);
    }
    work();
    for (auto& helper : helpers)
        helper.join();
}

// Helper threads kept asleep between calls, one per CPU and pinned to it, woken for the CPUs
// other than the caller's. Starting a thread and pinning it cost 0.25-0.9 ms on the bench's
// 2-vCPU machine, as much as the millisecond of statistics it was to share, and the caller waited
// for it before starting its own part. An unpinned helper, once woken, was put on the caller's
// CPU and joined in only at the end; pinned once when it starts, it wakes on its own CPU.
class HelperPool
{
public:
    // The process's pool, created on first use. After a fork the parent's helpers do not exist in
    // the child: the child gets a pool of its own. A pool is never destroyed (the old one after a
    // fork, or this one at exit, when its helpers may still be asleep in a wait).
    static HelperPool* forThisProcess()
    {
        static std::mutex guard;
        static HelperPool* pool = nullptr;
        std::lock_guard<std::mutex> lock(guard);
        if (!pool || pool->owner_ != getpid())
            pool = new HelperPool;
        return pool;
    }

    // Runs `work` on the caller and on `helpers` pool threads, each on a CPU other than the
    // caller's where there are enough; false, doing nothing, when the pool is already in use.
    bool run(int helpers, const std::function<void()>& work)
    {
        std::unique_lock<std::mutex> inUse(callMutex_, std::try_to_lock);
        if (!inUse.owns_lock())
            return false;
        const std::vector<int> cpus = cpusOtherThanCallers();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &work;
            unfinished_ = helpers;
            for (int k = 0; k < helpers; ++k) {
                // With no CPU list (another system, or more helpers than CPUs), unpinned ones.
                const int cpu = size_t(k) < cpus.size() ? cpus[size_t(k)] : -1 - k;
                Helper& helper = helperFor(cpu);
                helper.go = true;
                helper.wake.notify_one();
            }
        }
        // The helpers hold `work` by reference: wait for them even when the caller's part throws.
        std::exception_ptr failure;
        try {
            work();
        } catch (...) {
            failure = std::current_exception();
        }
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.wait(lock, [this] { return unfinished_ == 0; });
        job_ = nullptr;
        if (failure)
            std::rethrow_exception(failure);
        return true;
    }

private:
    struct Helper
    {
        std::condition_variable wake;
        bool go = false;
        std::thread thread;
    };

    // The helper for `cpu` (a negative key: an unpinned one), started on first use. Called with
    // mutex_ held.
    Helper& helperFor(int cpu)
    {
        auto& slot = helpers_[cpu];
        if (!slot) {
            slot = std::make_unique<Helper>();
            Helper* helper = slot.get();
            helper->thread = std::thread([this, helper, cpu] {
                pinCallerTo(cpu);
                serve(*helper);
            });
        }
        return *slot;
    }

    static void pinCallerTo(int cpu)
    {
#ifdef __linux__
        if (cpu < 0)
            return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one); // a failure leaves it where the scheduler puts it
#else
        (void)cpu;
#endif
    }

    void serve(Helper& helper)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            helper.wake.wait(lock, [&] { return helper.go; });
            helper.go = false;
            const std::function<void()>* job = job_;
            lock.unlock();
            (*job)();
            lock.lock();
            if (--unfinished_ == 0)
                finished_.notify_one();
        }
    }

    const pid_t owner_ = getpid();
    std::mutex callMutex_; // one call at a time
    std::mutex mutex_;     // what follows
    std::condition_variable finished_;
    std::map<int, std::unique_ptr<Helper>> helpers_; // by CPU; never joined, see forThisProcess
    const std::function<void()>* job_ = nullptr;
    int unfinished_ = 0;
};

} // namespace

void spreadOverCores(int threads, const std::function<void()>& work)
{
    if (threads <= 1) {
        work();
        return;
    }
    if (HelperPool::forThisProcess()->run(threads - 1, work))
        return;
    spreadOverFreshThreads(threads, work);
}

} // namespace nanscope
