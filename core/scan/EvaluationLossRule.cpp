// The evaluation loss non-finite while the training loss is finite, or while no training loss is
// logged at all. Training looks fine and only evaluation breaks: an evaluation batch whose labels
// are all masked (a mean over zero tokens is 0/0), a metric or loss computed in float16, a model
// switched to eval() whose normalisation statistics were poisoned. A blow-up of the training
// itself explains a NaN evaluation, and BatchNorm corruption is its own incident, so neither is
// repeated here.
#include "core/scan/ScanRules.h"

#include <cmath>

namespace nanscope::scan {

namespace {

bool reportedAlready(const ScanReport& report)
{
    for (const Incident& incident : report.incidents)
        if (incident.kind == IncidentKind::BnCorruption || incident.kind == IncidentKind::Blowup)
            return true;
    return false;
}

} // namespace

Status detectEvaluationNonfinite(ScanContext& context)
{
    const RunScalars& scalars = context.scalars;
    if (scalars.evalLoss.empty() || reportedAlready(context.report))
        return Status::success();
    EvaluationFacts facts;
    std::optional<int64_t> first;
    int64_t last = 0;
    bool nonfiniteAtEnd = false;
    for (size_t r = 0; r < scalars.evalLoss.size() && r < scalars.evalSteps.size(); ++r) {
        const bool bad = !std::isfinite(scalars.evalLoss[r]);
        if (first)
            ++facts.evaluationsSince;
        if (bad) {
            if (!first) {
                first = scalars.evalSteps[r];
                facts.evaluationsSince = 1;
            }
            ++facts.nonfinite;
            last = scalars.evalSteps[r];
        }
        nonfiniteAtEnd = bad;
    }
    if (!first)
        return Status::success();
    facts.firstStep = *first;
    facts.evaluations = int64_t(scalars.evalLoss.size());
    facts.trainingLogged = !scalars.loss.empty();
    if (facts.trainingLogged) {
        int64_t rows = 0, finite = 0;
        for (size_t r = rowAtOrAfter(scalars.steps, *first); r < scalars.steps.size(); ++r, ++rows)
            finite += scalars.loss.finite[r];
        // A training loss that is itself mostly non-finite is the blow-up rule's to explain.
        if (rows > 0 && finite * 2 <= rows)
            return Status::success();
    }
    facts.toEnd = nonfiniteAtEnd;
    Incident incident;
    incident.kind = IncidentKind::EvalNonfinite;
    // Every evaluation from the first bad one to the end: evaluation is broken, not noisy.
    incident.severity = facts.toEnd && facts.nonfinite == facts.evaluationsSince ? Severity::Critical
                                                                                  : Severity::Warning;
    incident.onsetStep = *first;
    auto& e = incident.evidence;
    e.series = "eval_loss";
    e.windowBeginStep = *first;
    e.windowEndStep = last;
    e.count = facts.nonfinite;
    e.note = "eval_loss non-finite on " + std::to_string(facts.nonfinite) + " of " +
             std::to_string(facts.evaluations) + " evaluations";
    applyDiagnosis(incident, diagnoseEvaluationNonfinite(facts));
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace nanscope::scan
