#pragma once

#include "core/Result.h"
#include "core/run/RunWriter.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nanscope {

// A RunWriter whose appends run on a thread of its own, for a recorder inside a training loop.
//
// Why: run.h5's appends and the flush after each (the contract's, so a reader follows the run and
// a killed trainer leaves every flushed row) cost the C++ Guard about 0.75 ms a step on a 28 ms
// MLP step (bench_guard), all of it on the training thread. Here the training thread only moves
// the step's rows into a queue; the writer thread appends and flushes them in the order given,
// exactly as RunWriter would have. libhdf5 is built thread-safe on Debian (H5_HAVE_THREADSAFE),
// so HDF5 calls elsewhere in the process are serialised with the writer's, not raced.
//
// What a caller gives up, and how it gets it back:
// - A row is in run.h5 a moment after the call, not at its return: drain() waits until every
//   row queued so far is written and flushed (the Guard drains at an incident and at close).
// - A write that fails is reported by the next call (an append, drain or close), which returns
//   the first failure; nothing after a failure is written, since the file's state is then unknown.
// - Memory stays bounded: an append waits while kMaxQueued jobs are queued (a slow disk slows
//   the loop down, as the synchronous writer did, rather than growing the queue without end).
// - fork(): a child must not inherit libhdf5's lock held by the writer thread, which the child
//   does not have (its first HDF5 call would hang). A fork waits for the job in hand
//   (pthread_atfork), so the writer is between jobs when the process is copied.
class RunWriterThread
{
public:
    static constexpr size_t kMaxQueued = 64;

    ~RunWriterThread(); // close(), its failure dropped: call close() to see it
    RunWriterThread(const RunWriterThread&) = delete;
    RunWriterThread& operator=(const RunWriterThread&) = delete;

    // Creates the run (RunWriter::create, on the calling thread, so its errors are reported at
    // once), then starts the writer thread.
    static Result<std::unique_ptr<RunWriterThread>> create(const std::string& runDirectory, const RunSchema& schema);

    // RunWriter's appends, queued. Each returns the first failure of an earlier append, if any.
    Status appendRow(std::string table, int64_t step, std::map<std::string, std::vector<float>> values);
    Status appendScalars(int64_t step, std::map<std::string, double> values);
    Status appendEvent(int64_t step, std::string kind, std::string message);

    // Waits until every append queued so far is in run.h5 and flushed.
    Status drain();
    // Drains, stops the thread and closes run.h5. Further calls return the close's status.
    Status close();

private:
    explicit RunWriterThread(std::unique_ptr<RunWriter> writer);
    static void holdForFork();
    static void releaseAfterFork();
    Status enqueue(std::function<Status(RunWriter&)> job);
    void run();

    std::unique_ptr<RunWriter> m_writer;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<std::function<Status(RunWriter&)>> m_jobs;
    std::mutex m_inJob;      // held while a job runs; a fork waits for it
    bool m_busy = false;     // the writer thread holds a job outside the queue
    bool m_closed = false;   // close() was called: the thread writes what is queued, then stops
    Status m_failure = Status::success(); // the first failed job's error
    std::thread m_thread;
};

} // namespace nanscope
