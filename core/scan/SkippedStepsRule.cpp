// Long runs of skipped optimizer steps that no blow-up, loss-scale collapse or non-finite burst
// explains: the training guards against something the scan cannot see.
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// Another incident accounts for the skipped rows [start, end) (steps [first, last]).
bool explainedByOtherIncident(const ScanContext& context, size_t start, size_t end, int64_t first, int64_t last)
{
    bool explained = context.blowupOnsetStep && first >= *context.blowupOnsetStep;
    for (auto [from, to] : context.collapseWindows)
        explained = explained || (first <= to && last >= from);
    for (auto [firstRow, lastRow] : context.burstRows)
        explained = explained || (start <= lastRow && end - 1 >= firstRow);
    return explained;
}

// The loss scaler's start-up search: from the first logged step, every skipped step halves the
// loss scale (fp16 AMP starts at 2^16 and halves on each overflow until the gradients fit). Normal,
// and over once the scale is found.
bool startupScaleSearch(const RunScalars& scalars, size_t start, size_t end)
{
    if (start > 1 || scalars.lossScale.size() < end || end - start < 2)
        return false;
    size_t decreases = 0;
    for (size_t r = start + 1; r < end; ++r)
        decreases += scalars.lossScale[r] < scalars.lossScale[r - 1];
    return decreases + 1 >= end - start;
}

} // namespace

Status detectSkippedSteps(ScanContext& context)
{
    const RunScalars& scalars = context.scalars;
    if (scalars.skipped.empty())
        return Status::success();
    const size_t n = scalars.skipped.size();
    size_t r = 0;
    while (r < n) {
        if (!scalars.skippedAt(r)) {
            ++r;
            continue;
        }
        const size_t start = r;
        while (r < n && scalars.skippedAt(r))
            ++r;
        const int64_t first = scalars.steps[start];
        const int64_t last = scalars.steps[r - 1];
        const int64_t length = int64_t(r - start);
        if (length < context.config.skippedRunSteps || explainedByOtherIncident(context, start, r, first, last) ||
            startupScaleSearch(scalars, start, r))
            continue;
        Incident incident;
        incident.kind = IncidentKind::SkippedSteps;
        incident.onsetStep = first;
        const bool toEnd = r == n;
        incident.severity = toEnd ? Severity::Critical : Severity::Warning;
        incident.evidence.series = rf::scalarSeries(rf::scalar::kSkipped);
        incident.evidence.windowBeginStep = first;
        incident.evidence.windowEndStep = last;
        incident.evidence.count = length;
        if (toEnd)
            incident.evidence.note = "still skipping at the end of the log";
        applyDiagnosis(incident,
                       diagnoseSkippedSteps(SkippedStepsFacts{first, last, length, toEnd, context.batchNote(first)}));
        context.report.incidents.push_back(std::move(incident));
    }
    return Status::success();
}

} // namespace nanscope::scan
