// Long runs of skipped optimizer steps that no blow-up, loss-scale collapse or non-finite burst
// explains: the training guards against something the scan cannot see.
#include "core/scan/ScanRules.h"

namespace nanscope::scan {

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
        if (length < context.config.skippedRunSteps || explainedByOtherIncident(context, start, r, first, last))
            continue;
        Incident incident;
        incident.kind = IncidentKind::SkippedSteps;
        incident.onsetStep = first;
        const bool toEnd = r == n;
        incident.severity = toEnd ? Severity::Critical : Severity::Warning;
        incident.evidence.series = "scalars/skipped";
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
