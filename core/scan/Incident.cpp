#include "core/scan/Incident.h"

namespace nanscope {

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
