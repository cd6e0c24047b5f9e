// Normalisation running statistics (/buffers) that went non-finite, negative or collapsed to ~0.
// Streams the table in row blocks; each value is judged by core/tensor/BatchNormHealth, the
// judgement the BatchNorm view, the report and `nanscope stats` share.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/tensor/BatchNormHealth.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope::scan {

namespace {

namespace rf = runformat;
using batchnorm::BufferHealth;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Per layer: the first step of each fault, and what the incidents report about it.
struct BufferTally
{
    explicit BufferTally(size_t width)
        : firstNonfinite(width, kNever)
        , firstNegative(width, kNever)
        , firstCollapse(width, kNever)
        , nonfiniteRows(width, 0)
        , nonfiniteAtEnd(width, 0)
        , lowestVar(width, kInf)
    {
    }

    std::vector<int64_t> firstNonfinite, firstNegative, firstCollapse;
    std::vector<int64_t> nonfiniteRows;
    std::vector<uint8_t> nonfiniteAtEnd; // non-finite in the last row seen
    std::vector<double> lowestVar;
};

Status tallyBuffers(const ScanContext& context, int64_t rows, size_t width, BufferTally& tally)
{
    const ScanInputs& inputs = context.inputs;
    const auto& steps = inputs.steps(rf::kBuffers);
    const bool haveNonfinite = inputs.hasDataset(rf::kBuffers, rf::column::kNonfinite);
    const bool haveVar = inputs.hasDataset(rf::kBuffers, rf::column::kRunningVarMin);
    const double floor = context.config.runningVarFloor;
    std::vector<float>& nonfinite = inputs.blockBuffer(0);
    std::vector<float>& var = inputs.blockBuffer(1);
    for (int64_t begin = 0; begin < rows; begin += context.config.blockRows) {
        const int64_t count = std::min(context.config.blockRows, rows - begin);
        if (haveNonfinite)
            if (Status s = inputs.readBlockInto(rf::kBuffers, rf::column::kNonfinite, begin, count, nonfinite); !s)
                return s;
        if (haveVar)
            if (Status s = inputs.readBlockInto(rf::kBuffers, rf::column::kRunningVarMin, begin, count, var); !s)
                return s;
        // Fast path for the usual clean block: nothing non-finite, no variance at the floor, so
        // nothing judgeBuffers could call unhealthy. (NaN, no finite element, passes, as there.)
        bool clean = true;
        for (float v : nonfinite)
            clean &= !(v > 0);
        for (float v : var)
            clean &= !(v <= floor);
        if (clean) {
            std::fill(tally.nonfiniteAtEnd.begin(), tally.nonfiniteAtEnd.end(), 0);
            // Row by row: a division per value (k % width) would make this loop most of the rule.
            double* lowest = tally.lowestVar.data();
            const size_t rowsRead = width ? var.size() / width : 0;
            for (size_t row = 0; row < rowsRead; ++row) {
                const float* values = var.data() + row * width;
                for (size_t b = 0; b < width; ++b)
                    if (std::isfinite(values[b]))
                        lowest[b] = std::min(lowest[b], double(values[b]));
            }
            continue;
        }
        for (int64_t r = 0; r < count; ++r) {
            const int64_t step = steps[size_t(begin + r)];
            for (size_t b = 0; b < width; ++b) {
                const size_t k = size_t(r) * width + b;
                const double bad = nonfinite.empty() ? 0.0 : double(nonfinite[k]);
                const double varianceMin = var.empty() ? kNaN : double(var[k]);
                const BufferHealth health = batchnorm::judgeBuffers(bad, varianceMin, floor);
                const bool poisoned = health == BufferHealth::Poisoned;
                if (poisoned) {
                    tally.firstNonfinite[b] = std::min(tally.firstNonfinite[b], step);
                    ++tally.nonfiniteRows[b];
                }
                tally.nonfiniteAtEnd[b] = poisoned;
                if (std::isfinite(varianceMin))
                    tally.lowestVar[b] = std::min(tally.lowestVar[b], varianceMin);
                if (health == BufferHealth::Negative)
                    tally.firstNegative[b] = std::min(tally.firstNegative[b], step);
                else if (health == BufferHealth::Collapsed)
                    tally.firstCollapse[b] = std::min(tally.firstCollapse[b], step);
            }
        }
    }
    return Status::success();
}

// The evaluation loss is what users see of broken running statistics: how often it is NaN after
// `step`, when it is NaN on most of those rows while the training loss is finite on most.
std::optional<int64_t> evalOnlyNanCountAfter(const RunScalars& scalars, int64_t step)
{
    if (scalars.evalLoss.empty())
        return std::nullopt;
    int64_t evalNan = 0, evaluations = 0, trainFinite = 0, trainRows = 0;
    for (size_t r = rowAtOrAfter(scalars.evalSteps, step); r < scalars.evalSteps.size(); ++r) {
        ++evaluations;
        evalNan += !std::isfinite(scalars.evalLoss[r]);
    }
    for (size_t r = rowAtOrAfter(scalars.steps, step); r < scalars.steps.size(); ++r) {
        ++trainRows;
        trainFinite += scalars.loss.finite[r];
    }
    if (evaluations > 0 && trainRows > 0 && evalNan * 2 > evaluations && trainFinite * 2 > trainRows)
        return evalNan;
    return std::nullopt;
}

// One incident for every layer with a first step of `fault` in `first`.
void reportFault(ScanContext& context, const BufferTally& tally, BufferFault fault, const std::vector<int64_t>& first,
                 Severity severity, int64_t lastStep)
{
    const TableInfo* buffers = context.inputs.table(rf::kBuffers);
    const size_t width = first.size();
    const bool nonfinite = fault == BufferFault::Nonfinite;
    std::vector<RankedOnset> onsets;
    for (size_t b = 0; b < width; ++b)
        if (first[b] != kNever)
            onsets.push_back({LayerOnset{buffers->names[b], "buffers", first[b], nonfinite ? kInf : 0.0, nonfinite,
                                         nonfinite ? std::optional<int64_t>(first[b]) : std::nullopt},
                              context.order.module(buffers->names[b])});
    if (onsets.empty())
        return;
    orderLayerOnsets(onsets, context.config.tieDecades);
    Incident incident;
    incident.kind = IncidentKind::BnCorruption;
    incident.severity = severity;
    incident.onsetStep = onsets.front().first.onsetStep;
    for (const auto& [onset, position] : onsets) {
        incident.layers.push_back(onset.name);
        incident.evidence.layerOnsets.push_back(onset);
    }
    incident.evidence.windowBeginStep = incident.onsetStep;
    incident.evidence.windowEndStep = lastStep;
    BufferFacts facts;
    facts.fault = fault;
    facts.layers = incident.layers;
    facts.onsetStep = incident.onsetStep;
    facts.varianceFloor = context.config.runningVarFloor;
    if (nonfinite) {
        int64_t count = 0;
        for (size_t b = 0; b < width; ++b) {
            count = std::max(count, tally.nonfiniteRows[b]);
            facts.nonfiniteToEnd = facts.nonfiniteToEnd || tally.nonfiniteAtEnd[b];
        }
        incident.evidence.series = "buffers/nonfinite";
        incident.evidence.count = count;
        facts.evalOnlyNanCount = evalOnlyNanCountAfter(context.scalars, incident.onsetStep);
        if (facts.evalOnlyNanCount)
            incident.evidence.note = "eval_loss non-finite on " + std::to_string(*facts.evalOnlyNanCount) +
                                     " logged steps after the onset; training loss finite";
        if (const Incident* input = context.badInputNear(incident.onsetStep, 1, 0);
            input && input->severity == Severity::Critical)
            facts.nanInputStep = input->onsetStep;
        else
            facts.onsetStepSkipped = context.scalars.skippedAt(rowAtOrAfter(context.scalars.steps, incident.onsetStep));
    } else {
        incident.evidence.series = "buffers/running_var_min";
        double lowest = kInf;
        for (size_t b = 0; b < width; ++b)
            if (first[b] != kNever)
                lowest = std::min(lowest, tally.lowestVar[b]);
        incident.evidence.peak = lowest;
        incident.evidence.note = "lowest running variance " + numberText(lowest);
    }
    applyDiagnosis(incident, diagnoseBufferCorruption(facts));
    context.report.incidents.push_back(std::move(incident));
}

} // namespace

Status detectBatchNormCorruption(ScanContext& context)
{
    const TableInfo* buffers = context.inputs.table(rf::kBuffers);
    if (!buffers || buffers->rows == 0 || buffers->names.empty())
        return Status::success();
    const auto& steps = context.inputs.steps(rf::kBuffers);
    const int64_t rows = std::min<int64_t>(int64_t(steps.size()), buffers->rows);
    const size_t width = buffers->names.size();
    BufferTally tally(width);
    if (Status s = tallyBuffers(context, rows, width, tally); !s)
        return s;
    const int64_t lastStep = steps[size_t(rows - 1)];
    reportFault(context, tally, BufferFault::Nonfinite, tally.firstNonfinite, Severity::Critical, lastStep);
    // A layer already non-finite says it all; negative and collapsed variances of the others.
    for (size_t b = 0; b < width; ++b)
        if (tally.firstNonfinite[b] != kNever)
            tally.firstNegative[b] = tally.firstCollapse[b] = kNever;
    reportFault(context, tally, BufferFault::Negative, tally.firstNegative, Severity::Critical, lastStep);
    for (size_t b = 0; b < width; ++b)
        if (tally.firstNegative[b] != kNever)
            tally.firstCollapse[b] = kNever;
    reportFault(context, tally, BufferFault::Collapsed, tally.firstCollapse, Severity::Warning, lastStep);
    return Status::success();
}

} // namespace nanscope::scan
