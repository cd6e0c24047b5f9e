#include "core/scan/Incident.h"

#include <algorithm>

namespace nanscope {

int64_t incidentEndStep(const Incident& incident)
{
    if (incident.nonfiniteStep)
        return *incident.nonfiniteStep;
    return std::max(incident.onsetStep, incident.evidence.windowEndStep);
}

StepRange incidentViewRange(const Incident& incident, int64_t runFirstStep, int64_t runLastStep)
{
    const double onset = double(incident.onsetStep);
    const double end = double(incidentEndStep(incident));
    const double margin = std::max(20.0, (end - onset) * 0.6);
    StepRange range{onset - margin, end + margin};
    if (runLastStep > runFirstStep) {
        range.first = std::max(range.first, double(runFirstStep));
        range.last = std::min(range.last, double(runLastStep));
        if (range.last <= range.first) // an incident past the logged steps: show it anyway
            range = {onset - margin, end + margin};
    }
    return range;
}

const char* toString(IncidentKind kind)
{
    switch (kind) {
    case IncidentKind::Blowup: return "blowup";
    case IncidentKind::BnCorruption: return "bn_corruption";
    case IncidentKind::LossScaleCollapse: return "loss_scale_collapse";
    case IncidentKind::BadInput: return "bad_input";
    case IncidentKind::SkippedSteps: return "skipped_steps";
    case IncidentKind::NonfiniteLoss: return "nonfinite_loss";
    case IncidentKind::Vanishing: return "vanishing";
    case IncidentKind::Spike: return "spike";
    case IncidentKind::DamagedData: return "damaged_data";
    case IncidentKind::EvalNonfinite: return "eval_nonfinite";
    case IncidentKind::NonfiniteParameters: return "nonfinite_parameters";
    case IncidentKind::RankNonfinite: return "rank_nonfinite";
    case IncidentKind::RankDivergence: return "rank_divergence";
    case IncidentKind::RankStopped: return "rank_stopped";
    }
    return "unknown";
}

const char* toString(Severity severity)
{
    switch (severity) {
    case Severity::Critical: return "critical";
    case Severity::Warning: return "warning";
    case Severity::Info: return "info";
    }
    return "unknown";
}

const char* toString(BlowupPattern pattern)
{
    return pattern == BlowupPattern::Sudden ? "sudden" : "gradual";
}

} // namespace nanscope
