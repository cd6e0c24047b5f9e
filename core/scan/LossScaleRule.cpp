// The AMP loss scale halving step after step: a cascade of at least loss_scale_cascade
// decreases that ends at the floor, or that starts after the scaler's warm-up search.
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

namespace nanscope::scan {

namespace rf = runformat;

Status detectLossScaleCollapse(ScanContext& context)
{
    const RunScalars& scalars = context.scalars;
    const std::vector<double>& scale = scalars.lossScale;
    const ScanConfig& config = context.config;
    if (scale.empty())
        return Status::success();
    const size_t n = scale.size();
    size_t r = 1;
    while (r < n) {
        if (!(scale[r] < scale[r - 1])) {
            ++r;
            continue;
        }
        const size_t start = r;
        while (r < n && scale[r] < scale[r - 1])
            ++r;
        const int64_t decreases = int64_t(r - start);
        const double from = scale[start - 1];
        const double to = scale[r - 1];
        const int64_t startStep = scalars.steps[start];
        const bool atFloor = !scalars.lossScaleFromEvents && to <= config.lossScaleFloor;
        if (decreases < config.lossScaleCascade || (!atFloor && startStep < config.lossScaleWarmupSteps))
            continue;
        // How long it stays down: the scale recovering means training went on.
        size_t stay = r;
        while (stay < n && scale[stay] <= to * 1.0000001)
            ++stay;
        Incident incident;
        incident.kind = IncidentKind::LossScaleCollapse;
        incident.severity = Severity::Critical;
        incident.onsetStep = startStep;
        auto& e = incident.evidence;
        e.series = scalars.lossScaleFromEvents ? "events/loss_scale_decrease" : rf::scalarSeries("loss_scale");
        e.windowBeginStep = startStep;
        e.windowEndStep = scalars.steps[stay - 1];
        e.baseline = from;
        e.peak = to;
        e.jumpRatio = to > 0 ? to / from : 0.0;
        e.count = decreases;
        int64_t skipped = 0;
        for (size_t k = start; k < stay; ++k)
            skipped += scalars.skippedAt(k);
        e.note = std::to_string(decreases) + " consecutive decreases from " + numberText(from) + " to " +
                 numberText(to) + (skipped ? "; " + std::to_string(skipped) + " steps skipped" : "") +
                 (stay == n ? "; still down at the end of the log" : "");
        applyDiagnosis(incident, diagnoseLossScaleCollapse(e.note));
        context.collapseWindows.push_back({startStep, e.windowEndStep});
        context.report.incidents.push_back(std::move(incident));
    }
    return Status::success();
}

} // namespace nanscope::scan
