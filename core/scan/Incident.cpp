#include "core/scan/Incident.h"

#include "core/NumberText.h"

#include <algorithm>

namespace nanscope {

int64_t incidentEndStep(const Incident& incident)
{
    // A burst of non-finite steps the training recovered from ends at its last one; its
    // nonfiniteStep is its first.
    if (incident.kind == IncidentKind::NonfiniteLoss)
        return std::max(incident.onsetStep, incident.evidence.windowEndStep);
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
    case IncidentKind::NonfiniteGradient: return "nonfinite_gradient";
    case IncidentKind::Vanishing: return "vanishing";
    case IncidentKind::Spike: return "spike";
    case IncidentKind::DamagedData: return "damaged_data";
    case IncidentKind::EvalNonfinite: return "eval_nonfinite";
    case IncidentKind::NonfiniteMetric: return "nonfinite_metric";
    case IncidentKind::NonfiniteParameters: return "nonfinite_parameters";
    case IncidentKind::RankNonfinite: return "rank_nonfinite";
    case IncidentKind::RankDivergence: return "rank_divergence";
    case IncidentKind::RankStopped: return "rank_stopped";
    case IncidentKind::ActivationGrowth: return "activation_growth";
    case IncidentKind::AdamEpsilon: return "adam_epsilon";
    case IncidentKind::ExpertCollapse: return "expert_collapse";
    case IncidentKind::OptimizerReset: return "optimizer_reset";
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

const char* toString(NonfiniteOrigin origin)
{
    return origin == NonfiniteOrigin::Parameters ? "parameters" : "forward";
}

std::vector<std::string> signatureFacts(const IncidentEvidence& e)
{
    std::vector<std::string> facts;
    if (e.nonfiniteOrigin)
        facts.push_back(std::string("NaN born in the ") +
                        (*e.nonfiniteOrigin == NonfiniteOrigin::Parameters ? "parameters (optimizer update)"
                                                                           : "forward pass"));
    if (e.float16HeadroomDecades)
        facts.push_back((*e.float16HeadroomDecades <= 0 ? std::string("float16 overflowed")
                                                        : "float16 headroom " + numberText(*e.float16HeadroomDecades, 2) + " decades") +
                        (e.headroomOf.empty() ? "" : " in " + e.headroomOf) +
                        (e.bfloat16HeadroomDecades ? " (bfloat16 " + numberText(*e.bfloat16HeadroomDecades) + " decades)" : ""));
    if (e.gradLeadSteps)
        facts.push_back(*e.gradLeadSteps >= 0 ? "grad norm rose " + std::to_string(*e.gradLeadSteps) + " steps before the loss"
                                              : "loss rose " + std::to_string(-*e.gradLeadSteps) + " steps before the grad norm");
    if (e.spikeScore)
        facts.push_back("spike score " + numberText(100.0 * *e.spikeScore) + "%");
    if (!e.deadAfter.empty()) {
        std::string names;
        for (size_t i = 0; i < e.deadAfter.size() && i < 4; ++i)
            names += (i ? ", " : "") + e.deadAfter[i];
        if (e.deadAfter.size() > 4)
            names += " and " + std::to_string(e.deadAfter.size() - 4) + " more";
        facts.push_back("dead after it (gradient exactly 0): " + names);
    }
    if (e.lossPlateauRatio)
        facts.push_back("loss plateau after/before x" + numberText(*e.lossPlateauRatio));
    if (e.gradientLevelRatio)
        facts.push_back("grad norm stays x" + numberText(*e.gradientLevelRatio) + " above its level before");
    if (e.epsilonDominatedShare)
        facts.push_back(numberText(100.0 * *e.epsilonDominatedShare) + "% of elements eps-dominated");
    return facts;
}

} // namespace nanscope
