// Layers whose gradient norm is zero, or vanishing_decades below the median layer, for at least
// vanishing_min_steps steps. Streams /layers/grad_norm, the largest dataset of most runs, in row
// blocks of 32-row cells; the next block is read while this one is analysed. Built with -O3
// (core/CMakeLists.txt): the loop below sees every value of that dataset.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>

namespace nanscope::scan {

namespace {

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
void accumulateRow(const uint32_t* __restrict row, size_t width, float* __restrict sums, int32_t* __restrict counted,
                   int32_t* __restrict zeros, int32_t* __restrict positive)
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

// A layer's stretch of vanishing cells.
struct VanishedRun
{
    size_t layer;
    int64_t begin; // steps
    int64_t end;
    double zeroFraction;
};

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

// Streams the first `rows` rows of /layers/grad_norm through the tracker.
Status streamGradNorms(ScanContext& context, int64_t rows, size_t width, VanishingTracker& tracker)
{
    const int64_t blockRows = context.config.blockRows;
    // The next block is read on a helper thread while this one is analysed: reading and
    // analysing cost about the same, so this halves the time. Only that thread reads
    // meanwhile, so HDF5 needs no thread safety; memory is two blocks.
    const ScanInputs& inputs = context.inputs;
    // Two buffers in turn: the helper fills one while this thread reads the other.
    std::vector<float>* buffers[2] = {&inputs.blockBuffer(0), &inputs.blockBuffer(1)};
    auto readBlockAt = [&inputs, rows, blockRows](int64_t begin, std::vector<float>* into) {
        return inputs.readBlockInto(rf::kLayers, rf::column::kGradNorm, begin, std::min(blockRows, rows - begin), *into);
    };
    std::future<Status> next = std::async(std::launch::async, readBlockAt, int64_t(0), buffers[0]);
    size_t current = 0;
    for (int64_t begin = 0; begin < rows; begin += blockRows, current = 1 - current) {
        const int64_t count = std::min(blockRows, rows - begin);
        if (Status read = next.get(); !read)
            return read;
        if (begin + blockRows < rows)
            next = std::async(std::launch::async, readBlockAt, begin + blockRows, buffers[1 - current]);
        const float* data = buffers[current]->data();
        for (int64_t cell = 0; cell < count; cell += kCellRows) {
            const int64_t cellCount = std::min(kCellRows, count - cell);
            for (int64_t r = cell; r < cell + cellCount; ++r)
                tracker.accumulate(data + size_t(r) * width);
            tracker.finishCell(begin + cell, begin + cell + cellCount);
        }
        if (!context.progressed(0.3 + 0.7 * double(begin + count) / double(rows), "layers"))
            return Status::success();
    }
    return Status::success();
}

// One incident for a group of layers: frozen (never had a gradient, Info) or vanished (Warning).
void reportGroup(ScanContext& context, std::vector<VanishedRun> group, bool frozen)
{
    if (group.empty())
        return;
    const std::vector<std::string>& names = context.inputs.table(rf::kLayers)->names;
    const ForwardOrder& order = context.order;
    std::sort(group.begin(), group.end(), [&](const VanishedRun& x, const VanishedRun& y) {
        if (x.begin != y.begin)
            return x.begin < y.begin;
        return order.parameter(names[x.layer]) < order.parameter(names[y.layer]);
    });
    Incident incident;
    incident.kind = IncidentKind::Vanishing;
    incident.severity = frozen ? Severity::Info : Severity::Warning;
    incident.onsetStep = group.front().begin;
    auto& e = incident.evidence;
    e.series = "layers/grad_norm";
    e.windowBeginStep = group.front().begin;
    e.windowEndStep = group.front().end;
    e.count = int64_t(group.size());
    for (const auto& v : group) {
        e.windowEndStep = std::max(e.windowEndStep, v.end);
        if (incident.layers.size() < size_t(context.config.maxLayersListed)) {
            incident.layers.push_back(names[v.layer]);
            e.layerOnsets.push_back(
                {names[v.layer], "layers/grad_norm", v.begin, -context.config.vanishingDecades, false, std::nullopt});
        }
    }
    if (frozen) {
        applyDiagnosis(incident, diagnoseFrozen(incident.layers, group.size()));
    } else {
        const double zeroFraction = group.front().zeroFraction;
        applyDiagnosis(incident, diagnoseVanishing(VanishingFacts{incident.layers, group.size(), zeroFraction,
                                                                  context.config.vanishingDecades, incident.onsetStep,
                                                                  e.windowEndStep}));
        e.note = "zero on " + numberText(100 * zeroFraction, 3) + "% of the rows";
    }
    context.report.incidents.push_back(std::move(incident));
}

} // namespace

Status detectVanishing(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    const TableInfo* layers = inputs.table(rf::kLayers);
    if (!layers || !inputs.hasDataset(rf::kLayers, rf::column::kGradNorm) || layers->names.size() < 2)
        return Status::success();
    const auto& steps = inputs.steps(rf::kLayers);
    int64_t rows = std::min<int64_t>(int64_t(steps.size()), layers->rows);
    // Not inside a blow-up: there the healthy layers look "vanished" next to the exploding ones.
    if (context.blowupOnsetStep)
        rows = std::min<int64_t>(rows, int64_t(rowAtOrAfter(steps, *context.blowupOnsetStep)));
    if (rows <= 0)
        return Status::success();
    const size_t width = layers->names.size();
    VanishingTracker tracker(width, steps, context.config);
    if (Status s = streamGradNorms(context, rows, width, tracker); !s || context.cancelled)
        return s;
    const std::vector<VanishedRun> vanished = tracker.finish();
    if (vanished.empty())
        return Status::success();

    // Layers that never had a gradient are frozen or unused (info); the others vanished.
    const int64_t firstStep = steps.front();
    const int64_t lastStep = steps[size_t(rows - 1)];
    std::vector<VanishedRun> frozen, lost;
    for (const auto& v : vanished)
        (v.begin == firstStep && v.end == lastStep ? frozen : lost).push_back(v);
    reportGroup(context, frozen, true);
    // Layers that vanish together form one incident; a later, separate group is another.
    std::sort(lost.begin(), lost.end(), [](const VanishedRun& x, const VanishedRun& y) { return x.begin < y.begin; });
    std::vector<VanishedRun> group;
    int64_t groupEnd = std::numeric_limits<int64_t>::min();
    for (const auto& v : lost) {
        if (!group.empty() && v.begin > groupEnd) {
            reportGroup(context, group, false);
            group.clear();
        }
        group.push_back(v);
        groupEnd = std::max(groupEnd, v.end);
    }
    reportGroup(context, group, false);
    return Status::success();
}

} // namespace nanscope::scan
