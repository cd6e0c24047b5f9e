// Layers whose gradient norm is zero, or vanishing_decades below the median layer, for at least
// vanishing_min_steps steps. Streams /layers/grad_norm, the largest dataset of most runs, in row
// blocks of 32-row cells; the next block is read while this one is analysed. Built with -O3
// (core/CMakeLists.txt): the loop below sees every value of that dataset.
#include "core/scan/ScanRules.h"

#include "core/scan/VanishedLayers.h"

#include "core/CpuFeatures.h"
#include "core/run/Hdf5Handle.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <optional>

namespace nanscope::scan {

// Internal to this rule; named, not anonymous, because VanishingHeadStart (declared in
// ScanContext.h) holds a tracker.
namespace vanishingrule {

namespace rf = runformat;

constexpr int64_t kCellRows = 32;

// log10 for the streaming pass: exponent bits plus a quadratic for the mantissa, within ~0.004
// decades, several times faster than std::log10 on a hundred million values.
inline float fastLog10Bits(uint32_t bits)
{
    const float exponent = float(int((bits >> 23) & 0xFF) - 127);
    bits = (bits & 0x007FFFFFu) | 0x3F800000u;
    float m;
    std::memcpy(&m, &bits, sizeof m);
    const float log2m = (-0.34484843f * m + 2.02466578f) * m - 0.67487759f;
    return (exponent + log2m) * 0.30102999566f;
}

// One row of a [n, L] float table into per-column tallies: non-finite values are skipped, zeros
// counted, the others' log10 summed. Works on the bits with no branches, so the compiler
// vectorises it.
inline void accumulateRowWith(const uint32_t* __restrict row, size_t width, float* __restrict sums,
                              int32_t* __restrict counted, int32_t* __restrict zeros, int32_t* __restrict positive)
{
    for (size_t l = 0; l < width; ++l) {
        const uint32_t magnitude = row[l] & 0x7FFFFFFFu;                      // |v|
        const uint32_t finite = magnitude < 0x7F800000u;                      // exponent not all ones
        const uint32_t zero = magnitude == 0u;
        const uint32_t usable = finite & (1u - zero);
        const uint32_t mask = 0u - usable;                                    // all ones when usable
        const uint32_t argument = (magnitude & mask) | (0x3F800000u & ~mask); // 1.0f otherwise: log 0
        counted[l] += int32_t(finite);
        zeros[l] += int32_t(zero);
        positive[l] += int32_t(usable);
        sums[l] += fastLog10Bits(argument);
    }
}

// The same loop as 8-lane vector code where the processor has AVX2 (the same operations on each
// value, in the same order: the same sums), else as the baseline x86-64 build compiles it.
__attribute__((target("avx2"))) void accumulateRowAvx2(const uint32_t* row, size_t width, float* sums,
                                                       int32_t* counted, int32_t* zeros, int32_t* positive)
{
    accumulateRowWith(row, width, sums, counted, zeros, positive);
}

void accumulateRowPortable(const uint32_t* row, size_t width, float* sums, int32_t* counted, int32_t* zeros,
                           int32_t* positive)
{
    accumulateRowWith(row, width, sums, counted, zeros, positive);
}

void accumulateRow(const uint32_t* row, size_t width, float* sums, int32_t* counted, int32_t* zeros,
                   int32_t* positive)
{
    (cpu::hasAvx2() ? accumulateRowAvx2 : accumulateRowPortable)(row, width, sums, counted, zeros, positive);
}


// Cell by cell: which layers are vanishing, and for how long.
class VanishingTracker
{
public:
    VanishingTracker(size_t width, const std::vector<int64_t>& steps, const ScanConfig& config)
        : m_width(width)
        , m_steps(steps)
        , m_config(config)
        , m_open(width)
        , m_sumLog(width)
        , m_cellMean(width)
        , m_positive(width)
        , m_zeros(width)
        , m_counted(width)
    {
        m_scratch.reserve(width);
    }

    void accumulate(const float* row)
    {
        accumulateRow(reinterpret_cast<const uint32_t*>(row), m_width, m_sumLog.data(), m_counted.data(),
                      m_zeros.data(), m_positive.data());
    }

    // Judges the cell of rows [cellBegin, cellEnd) accumulated since the last one.
    void finishCell(int64_t cellBegin, int64_t cellEnd)
    {
        m_scratch.clear();
        for (size_t l = 0; l < m_width; ++l) {
            m_cellMean[l] = m_positive[l] ? double(m_sumLog[l]) / m_positive[l] : kNaN;
            if (std::isfinite(m_cellMean[l]))
                m_scratch.push_back(m_cellMean[l]);
        }
        const double median = medianOf(m_scratch);
        for (size_t l = 0; l < m_width; ++l) {
            if (m_counted[l] == 0)
                continue; // all non-finite: says nothing either way
            const bool mostlyZero = m_zeros[l] * 2 > m_counted[l];
            const bool far = std::isfinite(m_cellMean[l]) && std::isfinite(median) &&
                             m_cellMean[l] < median - m_config.vanishingDecades;
            Run& run = m_open[l];
            if (mostlyZero || far) {
                if (run.begin < 0)
                    run.begin = m_steps[size_t(cellBegin)];
                run.end = m_steps[size_t(cellEnd - 1)];
                run.zeroRows += m_zeros[l];
                run.cellRows += m_counted[l];
            } else {
                closeRun(l);
            }
        }
        std::fill(m_sumLog.begin(), m_sumLog.end(), 0.f);
        std::fill(m_positive.begin(), m_positive.end(), 0);
        std::fill(m_zeros.begin(), m_zeros.end(), 0);
        std::fill(m_counted.begin(), m_counted.end(), 0);
    }

    std::vector<VanishedRun> finish()
    {
        for (size_t l = 0; l < m_width; ++l)
            closeRun(l);
        return std::move(m_vanished);
    }

private:
    struct Run
    {
        int64_t begin = -1;
        int64_t end = -1;
        int64_t zeroRows = 0;
        int64_t cellRows = 0;
    };

    void closeRun(size_t layer)
    {
        Run& run = m_open[layer];
        if (run.begin >= 0 && run.end - run.begin + 1 >= m_config.vanishingMinSteps)
            m_vanished.push_back(
                {layer, run.begin, run.end, double(run.zeroRows) / double(std::max<int64_t>(1, run.cellRows))});
        run = Run{};
    }

    size_t m_width;
    const std::vector<int64_t>& m_steps;
    const ScanConfig& m_config;
    std::vector<Run> m_open;
    std::vector<VanishedRun> m_vanished;
    std::vector<float> m_sumLog;
    std::vector<double> m_cellMean;
    std::vector<int32_t> m_positive, m_zeros, m_counted;
    std::vector<double> m_scratch;
};

// Where a stream of /layers/grad_norm stops: at a row count known when it starts (the rule
// streaming in place), or set later (the head start, begun before the blow-up rule has said where
// a blow-up begins, which the stream must not look into). A cell is committed to before it is
// read, so a limit set after the stream has passed it is known as such.
class StreamLimit
{
public:
    explicit StreamLimit(std::optional<int64_t> rows = std::nullopt)
        : m_limit(rows)
    {
    }

    // The end of the cell [begin, wantedEnd) to accumulate: cut at the limit when one is set.
    int64_t commitCell(int64_t begin, int64_t wantedEnd)
    {
        std::lock_guard lock(m_mutex);
        const int64_t end = m_limit ? std::min(wantedEnd, *m_limit) : wantedEnd;
        m_committedEnd = std::max(m_committedEnd, end);
        return std::max(end, begin);
    }
    // Whether rows from `row` on may still be wanted.
    bool mayWant(int64_t row)
    {
        std::lock_guard lock(m_mutex);
        return !m_limit || row < *m_limit;
    }
    // Sets the limit; false when a cell reaching past it was already accumulated or begun.
    bool setLimit(int64_t rows)
    {
        std::lock_guard lock(m_mutex);
        m_limit = rows;
        return m_committedEnd <= rows;
    }

private:
    std::mutex m_mutex;
    std::optional<int64_t> m_limit;
    int64_t m_committedEnd = 0;
};

// Streams /layers/grad_norm (up to `availableRows`, and the limit) through the tracker, block by
// block into `buffers`: the next block is read on a helper thread while this one is analysed
// (reading and analysing cost about the same, so this halves the time; memory is two blocks).
// It starts at `firstRow` (a block's first row: the tracker holds every cell before it).
// `blockStart` (may be empty) sees the tracker before each block; `blockDone` hears the rows done
// after each block and returns false to stop.
Status streamGradNorms(const ScanInputs& inputs, int64_t blockRows, int64_t firstRow, int64_t availableRows,
                       VanishingTracker& tracker, std::array<std::vector<float>*, 2> buffers, StreamLimit& limit,
                       const std::function<void(int64_t, const VanishingTracker&)>& blockStart,
                       const std::function<bool(int64_t)>& blockDone)
{
    const size_t width = inputs.table(rf::kLayers)->names.size();
    auto readBlockAt = [&inputs, availableRows, blockRows](int64_t begin, std::vector<float>* into) {
        return inputs.readBlockInto(rf::kLayers, rf::column::kGradNorm, begin, std::min(blockRows, availableRows - begin),
                                    *into);
    };
    if (firstRow >= availableRows)
        return Status::success();
    std::future<Status> next = std::async(std::launch::async, readBlockAt, firstRow, buffers[0]);
    size_t current = 0;
    for (int64_t begin = firstRow; begin < availableRows && next.valid(); begin += blockRows, current = 1 - current) {
        const int64_t count = std::min(blockRows, availableRows - begin);
        if (Status read = next.get(); !read)
            return read;
        if (blockStart)
            blockStart(begin, tracker);
        if (begin + blockRows < availableRows && limit.mayWant(begin + blockRows))
            next = std::async(std::launch::async, readBlockAt, begin + blockRows, buffers[1 - current]);
        const float* data = buffers[current]->data();
        for (int64_t cell = 0; cell < count; cell += kCellRows) {
            const int64_t wantedEnd = begin + std::min(cell + kCellRows, count);
            const int64_t end = limit.commitCell(begin + cell, wantedEnd);
            if (end <= begin + cell)
                return Status::success(); // the limit: nothing past it
            for (int64_t r = cell; r < end - begin; ++r)
                tracker.accumulate(data + size_t(r) * width);
            tracker.finishCell(begin + cell, end);
            if (end < wantedEnd)
                return Status::success();
        }
        if (!blockDone(begin + count))
            return Status::success();
    }
    return Status::success();
}

// The rule's rows: those before a blow-up's gradients exploded (there the healthy layers look
// "vanished" next to the exploding ones).
int64_t rowsBeforeBlowup(const ScanContext& context, int64_t available)
{
    if (!context.explosionStep)
        return available;
    return std::min<int64_t>(available, int64_t(rowAtOrAfter(context.inputs.steps(rf::kLayers), *context.explosionStep)));
}

int64_t availableRows(const ScanInputs& inputs)
{
    const TableInfo* layers = inputs.table(rf::kLayers);
    if (!layers || !inputs.hasDataset(rf::kLayers, rf::column::kGradNorm) || layers->names.size() < 2)
        return 0;
    return std::min<int64_t>(int64_t(inputs.steps(rf::kLayers).size()), layers->rows);
}

} // namespace vanishingrule

using namespace vanishingrule;

// The stream begun before the rules: /layers/grad_norm is the largest read of most runs, and the
// rules before the vanishing rule (the blow-up's windows, /buffers, /activations) read other
// datasets, so the two overlap on two cores. It needs libhdf5's thread safety (Debian's has it),
// its own two block buffers, and the blow-up rule's verdict on where to stop, which comes later:
// until then it streams on. In a run whose blow-up begins at a row the stream has already passed,
// the rule goes back to the tally kept before a block at or before that row and streams the rest
// again, so the figures never depend on the timing.
class VanishingHeadStart
{
public:
    VanishingHeadStart(const ScanInputs& inputs, const ScanConfig& config, int64_t availableRows)
        : m_inputs(inputs)
        , m_blockRows(config.blockRows)
        , m_tracker(inputs.table(rf::kLayers)->names.size(), inputs.steps(rf::kLayers), config)
        , m_availableRows(availableRows)
    {
        m_result = std::async(std::launch::async, [this] {
            return streamGradNorms(
                m_inputs, m_blockRows, 0, m_availableRows, m_tracker, {&m_buffers[0], &m_buffers[1]}, m_limit,
                [this](int64_t blockBegin, const VanishingTracker& tracker) { keepSnapshot(blockBegin, tracker); },
                [this](int64_t rowsDone) {
                    m_rowsDone = rowsDone;
                    return !m_stop.load();
                });
        });
    }
    ~VanishingHeadStart()
    {
        m_stop = true;
        if (m_result.valid())
            m_result.wait();
    }
    VanishingHeadStart(const VanishingHeadStart&) = delete;
    VanishingHeadStart& operator=(const VanishingHeadStart&) = delete;

    // Where the rule will stop, once the blow-up rule has said: the stream reads no row past it
    // (when it has not passed it already; finishAt then goes back to a snapshot).
    void limitAt(int64_t rows) { m_limit.setLimit(rows); }

    void waitUntilStreamed() const
    {
        if (m_result.valid())
            m_result.wait();
    }

    // Stops the stream at `rows` and returns what it found, reporting progress while it runs.
    // When it had already gone past `rows`, the tracker comes back from the last snapshot at or
    // before them and streams the rest again, up to `rows`.
    Result<std::vector<VanishedRun>> finishAt(int64_t rows, ScanContext& context)
    {
        const bool inTime = m_limit.setLimit(rows);
        auto report = [&](int64_t done) {
            return context.progressed(0.3 + 0.7 * double(std::min(done, rows)) / double(std::max<int64_t>(rows, 1)),
                                      "layers");
        };
        while (m_result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
            if (!report(m_rowsDone))
                m_stop = true;
        if (Status streamed = m_result.get(); !streamed)
            return Error{streamed.error()};
        if (inTime || context.cancelled)
            return m_tracker.finish();
        size_t from = 0;
        for (size_t k = 0; k < m_snapshots.size(); ++k)
            if (m_snapshots[k].firstRow <= rows)
                from = k;
        if (m_snapshots.empty() || m_snapshots[from].firstRow > rows)
            return Error{"the vanishing rule's stream kept no state before row " + std::to_string(rows)};
        VanishingTracker tracker = std::move(m_snapshots[from].tracker);
        StreamLimit limit(rows);
        if (Status again = streamGradNorms(m_inputs, m_blockRows, m_snapshots[from].firstRow, rows, tracker,
                                           {&m_buffers[0], &m_buffers[1]}, limit, {}, report);
            !again)
            return Error{again.error()};
        return tracker.finish();
    }

private:
    // The tracker before a block, for a limit that comes after the stream has passed it. At most
    // kSnapshots are kept, every stride-th block's, the stride doubling as the stream goes on:
    // memory stays bounded, and streaming again from one costs at most a stride of blocks.
    static constexpr size_t kSnapshots = 16;
    struct Snapshot
    {
        int64_t firstRow;
        VanishingTracker tracker;
    };
    void keepSnapshot(int64_t blockBegin, const VanishingTracker& tracker)
    {
        if (!m_limit.mayWant(blockBegin + 1))
            return;
        const int64_t block = blockBegin / m_blockRows;
        if (block % m_stride != 0)
            return;
        m_snapshots.push_back({blockBegin, tracker});
        if (m_snapshots.size() > kSnapshots) {
            m_stride *= 2;
            std::vector<Snapshot> kept;
            for (Snapshot& snapshot : m_snapshots)
                if ((snapshot.firstRow / m_blockRows) % m_stride == 0)
                    kept.push_back(std::move(snapshot));
            m_snapshots = std::move(kept);
        }
    }

    const ScanInputs& m_inputs;
    int64_t m_blockRows;
    StreamLimit m_limit;
    std::atomic<bool> m_stop{false};
    std::atomic<int64_t> m_rowsDone{0};
    std::array<std::vector<float>, 2> m_buffers;
    VanishingTracker m_tracker;
    int64_t m_availableRows;
    std::vector<Snapshot> m_snapshots; // the stream's until it ends
    int64_t m_stride = 1;
    std::future<Status> m_result;
};


void startVanishingStream(ScanContext& context)
{
    const int64_t available = availableRows(context.inputs);
    if (available <= 0 || !hdf5::isThreadSafe())
        return;
    context.vanishingHeadStart = std::make_shared<VanishingHeadStart>(context.inputs, context.config, available);
}

void limitVanishingStream(ScanContext& context)
{
    if (context.vanishingHeadStart)
        context.vanishingHeadStart->limitAt(rowsBeforeBlowup(context, availableRows(context.inputs)));
}

void waitForVanishingStream(ScanContext& context)
{
    if (context.vanishingHeadStart)
        context.vanishingHeadStart->waitUntilStreamed();
}

Status detectVanishing(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    const int64_t available = availableRows(inputs);
    const int64_t rows = rowsBeforeBlowup(context, available);
    std::shared_ptr<VanishingHeadStart> headStart = std::move(context.vanishingHeadStart);
    if (rows <= 0)
        return Status::success();
    const auto& steps = inputs.steps(rf::kLayers);
    std::vector<VanishedRun> vanished;
    if (headStart) {
        auto found = headStart->finishAt(rows, context);
        headStart.reset();
        if (!found)
            return Error{found.error()};
        if (context.cancelled)
            return Status::success();
        vanished = std::move(*found);
    } else {
        VanishingTracker tracker(inputs.table(rf::kLayers)->names.size(), steps, context.config);
        StreamLimit limit(rows);
        const Status s = streamGradNorms(inputs, context.config.blockRows, 0, rows, tracker,
                                         {&inputs.blockBuffer(0), &inputs.blockBuffer(1)}, limit, {},
                                         [&](int64_t rowsDone) {
                                             return context.progressed(0.3 + 0.7 * double(rowsDone) / double(rows), "layers");
                                         });
        if (!s || context.cancelled)
            return s;
        vanished = tracker.finish();
    }
    if (vanished.empty())
        return Status::success();
    return reportVanished(context, vanished, rows, available);
}

} // namespace nanscope::scan
