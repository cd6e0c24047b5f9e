#include "core/run/RunWriterThread.h"

#include <pthread.h>

#include <set>
#include <utility>

namespace nanscope {

namespace {

// The failure is read a step or more later, so it says which step's row it was.
Status atStep(int64_t step, Status status)
{
    if (status)
        return status;
    return Error{"writing step " + std::to_string(step) + "'s row: " + status.error()};
}

// The live writers, for the fork handlers (registered once; pthread_atfork has no unregister).
std::mutex g_liveMutex;
std::set<RunWriterThread*> g_live;
std::once_flag g_forkHandlers;

} // namespace

// Before a fork: every writer finishes the job in hand and takes no other until after it.
void RunWriterThread::holdForFork()
{
    g_liveMutex.lock();
    for (RunWriterThread* writer : g_live)
        writer->m_inJob.lock();
}

// After it, in the parent and in the child (whose one thread is the one that forked, and so
// holds these locks): the writers go on, and the child's copies are usable.
void RunWriterThread::releaseAfterFork()
{
    for (RunWriterThread* writer : g_live)
        writer->m_inJob.unlock();
    g_liveMutex.unlock();
}

Result<std::unique_ptr<RunWriterThread>> RunWriterThread::create(const std::string& runDirectory,
                                                                 const RunSchema& schema)
{
    auto created = RunWriter::create(runDirectory, schema);
    if (!created)
        return Error{created.error()};
    return std::unique_ptr<RunWriterThread>(new RunWriterThread(std::move(*created)));
}

RunWriterThread::RunWriterThread(std::unique_ptr<RunWriter> writer)
    : m_writer(std::move(writer))
{
    std::call_once(g_forkHandlers, [] { pthread_atfork(&holdForFork, &releaseAfterFork, &releaseAfterFork); });
    {
        std::lock_guard live(g_liveMutex);
        g_live.insert(this);
    }
    m_thread = std::thread([this] { run(); });
}

RunWriterThread::~RunWriterThread()
{
    close();
    std::lock_guard live(g_liveMutex);
    g_live.erase(this);
}

Status RunWriterThread::enqueue(std::function<Status(RunWriter&)> job)
{
    std::unique_lock lock(m_mutex);
    if (m_closed)
        return Error{m_writer->directory() + ": run.h5 is closed"};
    m_changed.wait(lock, [this] { return m_jobs.size() < kMaxQueued || !m_failure; });
    if (!m_failure)
        return m_failure;
    m_jobs.push_back(std::move(job));
    m_changed.notify_all();
    return Status::success();
}

Status RunWriterThread::appendRow(std::string table, int64_t step, std::map<std::string, std::vector<float>> values)
{
    return enqueue([table = std::move(table), step, values = std::move(values)](RunWriter& writer) {
        return atStep(step, writer.appendRow(table, step, values));
    });
}

Status RunWriterThread::appendScalars(int64_t step, std::map<std::string, double> values)
{
    return enqueue(
        [step, values = std::move(values)](RunWriter& writer) { return atStep(step, writer.appendScalars(step, values)); });
}

Status RunWriterThread::appendEvent(int64_t step, std::string kind, std::string message)
{
    return enqueue([step, kind = std::move(kind), message = std::move(message)](RunWriter& writer) {
        return atStep(step, writer.appendEvent(step, kind, message));
    });
}

Status RunWriterThread::drain()
{
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [this] { return (m_jobs.empty() && !m_busy) || !m_failure || m_closed; });
    return m_failure;
}

Status RunWriterThread::close()
{
    {
        std::unique_lock lock(m_mutex);
        if (m_closed)
            return m_failure;
        m_closed = true;
        m_changed.notify_all();
    }
    if (m_thread.joinable())
        m_thread.join(); // the thread writes what is queued before it stops (unless a write failed)
    const Status closed = m_writer->close();
    std::lock_guard lock(m_mutex);
    if (m_failure && !closed)
        m_failure = closed;
    return m_failure;
}

void RunWriterThread::run()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_changed.wait(lock, [this] { return !m_jobs.empty() || m_closed; });
        if (m_jobs.empty() || !m_failure)
            break; // stopping with nothing left, or nothing more may be written
        std::function<Status(RunWriter&)> job = std::move(m_jobs.front());
        m_jobs.pop_front();
        m_busy = true;
        lock.unlock();
        Status status;
        {
            std::lock_guard inJob(m_inJob);
            status = job(*m_writer);
        }
        lock.lock();
        m_busy = false;
        if (!status && m_failure)
            m_failure = std::move(status);
        m_changed.notify_all();
    }
    m_jobs.clear();
    m_changed.notify_all();
}

} // namespace nanscope
