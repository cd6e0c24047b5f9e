// Adam epsilon domination: where sqrt(v_hat) <= eps Adam's step is lr * m / eps instead of a
// normalised lr-sized step, so the update shrinks with the gradient (too large an eps stalls
// training; eps=0 with a zero gradient divides 0 by 0). The scan reads no checkpoint: the caller
// measures the shares from the optimizer states it found (ScanFacts) and this rule judges them.
#include "core/scan/EpsilonDomination.h"
#include "core/scan/ScanRules.h"

#include <algorithm>

namespace nanscope::scan {

Status detectAdamEpsilon(ScanContext& context)
{
    for (const OptimizerStateFacts& state : context.inputs.facts().optimizerStates) {
        double dominated = 0, elements = 0;
        std::vector<std::pair<double, std::string>> worst;
        std::optional<double> eps;
        for (const ParameterEpsilonShare& p : state.parameters) {
            if (p.elements <= 0)
                continue;
            dominated += p.share * double(p.elements);
            elements += double(p.elements);
            if (epsilonDominated(p.share)) // named among the worst
                worst.push_back({p.share, p.parameter});
            if (p.eps)
                eps = p.eps;
        }
        if (elements <= 0 || !epsilonDominated(dominated / elements))
            continue;
        std::sort(worst.begin(), worst.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        AdamEpsilonFacts facts;
        facts.step = state.step;
        facts.file = state.file;
        facts.share = dominated / elements;
        facts.eps = eps;
        for (const auto& [share, name] : worst)
            facts.parameters.push_back(name);
        Incident incident;
        incident.kind = IncidentKind::AdamEpsilon;
        incident.severity = Severity::Warning;
        incident.onsetStep = state.step;
        incident.layers = facts.parameters;
        if (incident.layers.size() > size_t(context.config.maxLayersListed))
            incident.layers.resize(size_t(context.config.maxLayersListed));
        auto& e = incident.evidence;
        e.series = "optimizer state (" + state.file + ")";
        e.windowBeginStep = e.windowEndStep = state.step;
        e.epsilonDominatedShare = facts.share;
        e.count = int64_t(worst.size());
        applyDiagnosis(incident, diagnoseAdamEpsilon(facts));
        context.report.incidents.push_back(std::move(incident));
        return Status::success(); // the earliest state that shows it
    }
    return Status::success();
}

} // namespace nanscope::scan
