// The optimizer's state lost while the training goes on: its own count of its updates
// (optimizer_step, which a recorder logs when it knows the optimizer) started again at 0. A resume
// that loaded the weights but not the optimizer's state does this, and its first updates then move
// every weight by about the whole learning rate (Adam's moments start from zero): users report a
// loss spike right after such a resume (huggingface/transformers#33336, NVIDIA/apex#480,
// NVlabs/stylegan2-ada-pytorch#108).
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// A run whose first logged step is this far along continues a training from elsewhere (a count of
// 0 there is a resume); a run of its own starts its steps near 0.
constexpr int64_t kResumedFromStep = 10;
// The loss rows before a reset within the run whose median is its level, and the rows after it
// whose largest value is what the fresh state made of it (the spike lasts a few steps).
constexpr size_t kLevelRows = 10;
constexpr size_t kAfterRows = 5;

// The loss's median (or largest value) over finite rows [from, to), or NaN.
double lossOver(const RunScalars& scalars, size_t from, size_t to, bool largest)
{
    std::vector<double> values;
    for (size_t r = from; r < to && r < scalars.loss.size(); ++r)
        if (scalars.loss.finite[r])
            values.push_back(scalars.loss.raw[r]);
    if (values.empty())
        return std::nan("");
    return largest ? *std::max_element(values.begin(), values.end()) : medianOf(values);
}

// The recorder put an earlier state back (the optimizer's with it) at the end of a step in
// [from, upTo]: its event is logged at the step whose end did it, before the next step's row.
bool rolledBack(const RunScalars& scalars, int64_t from, int64_t upTo)
{
    return std::any_of(scalars.rollbackSteps.begin(), scalars.rollbackSteps.end(),
                       [&](int64_t step) { return step >= from && step <= upTo; });
}

} // namespace

Status detectOptimizerReset(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    if (!inputs.hasDataset(rf::kScalars, rf::scalar::kOptimizerStep))
        return Status::success();
    auto counts = inputs.readSeries(rf::kScalars, rf::scalar::kOptimizerStep);
    if (!counts)
        return Status::success(); // a damaged column is the damaged-values rule's
    const std::vector<int64_t>& steps = inputs.steps(rf::kScalars);
    const size_t n = std::min(steps.size(), counts->size());
    std::optional<size_t> previous; // the last row with a count
    for (size_t r = 0; r < n; ++r) {
        const double count = (*counts)[r];
        if (!std::isfinite(count) || count < 0)
            continue;
        OptimizerResetFacts facts;
        bool reset = false;
        if (!previous) {
            // The first count: 0 at a step far along is a training resumed with a fresh optimizer.
            reset = count == 0 && steps[r] >= kResumedFromStep;
        } else if (count < (*counts)[*previous] && count <= double(steps[r] - steps[*previous]) &&
                   !rolledBack(context.scalars, steps[*previous], steps[r])) {
            // Fell and began again within the rows' gap; a rollback to a saved state falls less, or
            // says so in its event.
            reset = true;
            facts.countBefore = int64_t((*counts)[*previous]);
            const double before = lossOver(context.scalars, *previous >= kLevelRows ? *previous + 1 - kLevelRows : 0,
                                           *previous + 1, false);
            const double after = lossOver(context.scalars, r, r + kAfterRows, true);
            if (std::isfinite(before) && std::isfinite(after) && before > 0)
                facts.lossRise = after / before;
        }
        previous = r;
        if (!reset)
            continue;
        // The step the fresh state began counting at.
        facts.step = steps[r] - int64_t(count);
        Incident incident;
        incident.kind = IncidentKind::OptimizerReset;
        incident.severity = Severity::Warning;
        incident.onsetStep = facts.step;
        incident.evidence.series = rf::scalarSeries(rf::scalar::kOptimizerStep);
        incident.evidence.windowBeginStep = facts.step;
        incident.evidence.windowEndStep = steps[r];
        if (facts.lossRise)
            incident.evidence.jumpRatio = *facts.lossRise;
        incident.evidence.note = facts.countBefore
                                     ? "optimizer_step " + std::to_string(*facts.countBefore) + " -> 0"
                                     : "optimizer_step 0 at the first logged step " + std::to_string(steps[r]);
        applyDiagnosis(incident, diagnoseOptimizerReset(facts));
        context.report.incidents.push_back(std::move(incident));
    }
    return Status::success();
}

} // namespace nanscope::scan
