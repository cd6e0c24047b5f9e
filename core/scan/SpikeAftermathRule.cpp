// What a spike the training recovered from left behind: parameters whose gradient is exactly zero
// on every logged step after it while it was not before (ReLU units a huge update pushed below
// zero for every input: dead), and a loss that settled at another level. Added to the Spike and
// NonfiniteLoss incidents the earlier rules reported; streams /layers/grad_norm from a little
// before the largest spikes to the end of the log.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/scan/Recovery.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

// Spikes looked at, largest first: the rest of a spiky run adds reading, not findings.
constexpr size_t kSpikesExamined = 5;
// Layer rows before the spike that show a layer was alive, and after it (once the spike has
// settled) that must all be zero for it to count as dead.
constexpr int64_t kRowsBefore = 50;
constexpr int64_t kMinRowsAfter = 5;
// Rows of the loss, after the spike has settled, that give its new level.
constexpr size_t kPlateauRows = 50;

std::optional<double> lossPlateauRatio(const ScanContext& context, int64_t onsetStep, int64_t endStep)
{
    const RunScalars& scalars = context.scalars;
    const LogSeries& loss = scalars.loss;
    const size_t onset = rowAtOrAfter(scalars.steps, onsetStep);
    const size_t settled = rowAfter(scalars.steps, endStep) + size_t(std::max<int64_t>(1, context.config.recoveryRows));
    auto levelOf = [&](size_t from, size_t to) {
        std::vector<double> v;
        for (size_t r = from; r < to && r < loss.size(); ++r)
            if (loss.finite[r] && loss.raw[r] > 0)
                v.push_back(loss.log[r]);
        return v.size() >= 5 ? medianOf(v) : kNaN;
    };
    const double before = levelOf(onset > kPlateauRows ? onset - kPlateauRows : 0, onset);
    const double after = levelOf(settled, settled + kPlateauRows);
    if (!std::isfinite(before) || !std::isfinite(after))
        return std::nullopt;
    return std::pow(10.0, after - before);
}

Result<std::vector<std::string>> deadAfter(const ScanContext& context, int64_t onsetStep, int64_t endStep)
{
    const ScanInputs& inputs = context.inputs;
    std::vector<std::string> dead;
    if (!inputs.hasDataset(rf::kLayers, rf::column::kGradNorm))
        return dead;
    const TableInfo* table = inputs.table(rf::kLayers);
    const auto& steps = inputs.steps(rf::kLayers);
    const int64_t rows = std::min<int64_t>(table->rows, int64_t(steps.size()));
    const int64_t onset = int64_t(rowAtOrAfter(steps, onsetStep));
    const int64_t firstAfter = int64_t(rowAfter(steps, endStep + 2));
    if (onset <= 0 || rows - firstAfter < kMinRowsAfter)
        return dead;
    const int64_t begin = std::max<int64_t>(0, onset - kRowsBefore);
    const size_t width = table->names.size();
    std::vector<uint8_t> aliveBefore(width, 0), zeroAfter(width, 1);
    std::vector<float>& values = inputs.blockBuffer(0);
    for (int64_t block = begin; block < rows; block += context.config.blockRows) {
        if (block >= onset && block + context.config.blockRows <= firstAfter)
            continue; // inside the spike: neither before nor after
        const int64_t count = std::min<int64_t>(context.config.blockRows, rows - block);
        if (Status s = inputs.readBlockInto(rf::kLayers, rf::column::kGradNorm, block, count, values); !s)
            return Error{s.error()};
        for (int64_t r = 0; r < count; ++r) {
            const int64_t row = block + r;
            for (size_t c = 0; c < width; ++c) {
                const float v = values[size_t(r) * width + c];
                if (row < onset && v != 0.f && std::isfinite(v))
                    aliveBefore[c] = 1;
                else if (row >= firstAfter && v != 0.f)
                    zeroAfter[c] = 0;
            }
        }
    }
    for (size_t c = 0; c < width; ++c)
        if (aliveBefore[c] && zeroAfter[c])
            dead.push_back(table->names[c]);
    return dead;
}

} // namespace

Status detectSpikeAftermath(ScanContext& context)
{
    std::vector<Incident*> spikes;
    for (Incident& incident : context.report.incidents)
        if ((incident.kind == IncidentKind::Spike || incident.kind == IncidentKind::NonfiniteLoss ||
             incident.kind == IncidentKind::NonfiniteGradient) &&
            incident.severity != Severity::Info)
            spikes.push_back(&incident);
    std::sort(spikes.begin(), spikes.end(), [](const Incident* x, const Incident* y) {
        return x->evidence.jumpRatio.value_or(0) > y->evidence.jumpRatio.value_or(0);
    });
    if (spikes.size() > kSpikesExamined)
        spikes.resize(kSpikesExamined);
    for (Incident* incident : spikes) {
        // A blow-up after the spike is what the log ends in, not a plateau.
        const int64_t end = incidentEndStep(*incident);
        if (context.blowupOnsetStep && *context.blowupOnsetStep <= end + context.config.recoveryRows)
            continue;
        SpikeAftermathFacts facts;
        facts.spikeStep = incident->onsetStep;
        facts.lossPlateauRatio = lossPlateauRatio(context, incident->onsetStep, end);
        // A step the training skipped never updated the weights: nothing it did can be left behind.
        const size_t firstRow = rowAtOrAfter(context.scalars.steps, incident->onsetStep);
        const size_t lastRow = rowAtOrAfter(context.scalars.steps, end);
        facts.updateSkipped = true;
        for (size_t r = firstRow; r <= lastRow && r < context.scalars.steps.size(); ++r)
            facts.updateSkipped = facts.updateSkipped && context.scalars.skippedAt(r);
        facts.updateSkipped = facts.updateSkipped && firstRow < context.scalars.steps.size();
        auto dead = deadAfter(context, incident->onsetStep, end);
        if (!dead)
            return Error{dead.error()};
        facts.deadAfter = std::move(*dead);
        const size_t spikeRow = rowAtOrAfter(context.scalars.steps, incident->onsetStep);
        const JumpRecovery course = judgeRecovery(context, spikeRow, rowAtOrAfter(context.scalars.steps, end));
        if (course.outcome == JumpOutcome::Recovered)
            facts.gradientLevelRatio = gradientLevelLeftBehind(context, spikeRow, course.backRow);
        incident->evidence.gradientLevelRatio = facts.gradientLevelRatio;
        incident->evidence.deadAfter = facts.deadAfter;
        incident->evidence.lossPlateauRatio = facts.lossPlateauRatio;
        Diagnosis diagnosis{incident->cause, incident->suggestion};
        addSpikeAftermath(diagnosis, facts);
        applyDiagnosis(*incident, std::move(diagnosis));
        for (const auto& name : facts.deadAfter)
            if (std::find(incident->layers.begin(), incident->layers.end(), name) == incident->layers.end())
                incident->layers.push_back(name);
    }
    return Status::success();
}

} // namespace nanscope::scan
