// Weights holding NaN/Inf (/layers/param_nonfinite). A run read from a folder of checkpoints has no loss or gradient norm to
// show a blow-up, only the parameters' values at each checkpoint: the first checkpoint whose
// parameters hold NaN/Inf is where the weights were destroyed. In a run with a logged blow-up
// before it, the blow-up incident already says so, and this rule stays quiet.
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

Status detectNonfiniteParameters(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    // The count of non-finite elements, which a checkpoint series measures. (A recorder's
    // param_norm is not read here: the blow-up rule reads the training's own signals.)
    const char* dataset = rf::column::kParamNonfinite;
    if (!inputs.hasDataset(rf::kLayers, dataset))
        return Status::success();
    const TableInfo* layers = inputs.table(rf::kLayers);
    const auto& steps = inputs.steps(rf::kLayers);
    const size_t width = layers->names.size();
    const int64_t rows = std::min<int64_t>(layers->rows, int64_t(steps.size()));
    std::vector<float>& block = inputs.blockBuffer(0);
    for (int64_t begin = 0; begin < rows; begin += context.config.blockRows) {
        const int64_t count = std::min<int64_t>(context.config.blockRows, rows - begin);
        if (Status s = inputs.readBlockInto(rf::kLayers, dataset, begin, count, block); !s)
            return s;
        for (int64_t r = 0; r < count; ++r) {
            NonfiniteParameterFacts facts;
            for (size_t c = 0; c < width; ++c) {
                const float v = block[size_t(r) * width + c];
                if (std::isfinite(v) && v > 0) {
                    facts.layers.push_back(layers->names[c]);
                    facts.count += double(v);
                }
            }
            if (facts.layers.empty())
                continue;
            const int64_t row = begin + r;
            facts.firstStep = steps[size_t(row)];
            facts.previousStep = row > 0 ? steps[size_t(row - 1)] : -1;
            facts.parameterCount = width;
            if (context.blowupOnsetStep && *context.blowupOnsetStep <= facts.firstStep)
                return Status::success();
            Incident incident;
            incident.kind = IncidentKind::NonfiniteParameters;
            incident.severity = Severity::Critical;
            incident.onsetStep = facts.firstStep;
            incident.nonfiniteStep = facts.firstStep;
            incident.layers = facts.layers;
            auto& e = incident.evidence;
            e.series = std::string("layers/") + dataset;
            e.windowBeginStep = facts.previousStep >= 0 ? facts.previousStep : facts.firstStep;
            e.windowEndStep = facts.firstStep;
            e.count = int64_t(facts.count);
            applyDiagnosis(incident, diagnoseNonfiniteParameters(facts));
            context.report.incidents.push_back(std::move(incident));
            return Status::success();
        }
    }
    return Status::success();
}

} // namespace nanscope::scan
