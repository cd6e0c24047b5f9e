// A logged metric that is NaN or Inf: a validation AUC over a batch of one class, an accuracy over
// no samples, a perplexity of an overflowed loss. NaN is data, and a person reading the numbers
// sees it, so the scan says so (info), naming the metric, its table and its steps. The series other
// rules judge are theirs (the loss, the gradient and parameter norms, the evaluation loss), and so
// are the steps where the training loss or gradient norm itself is non-finite or a blow-up began:
// there a NaN metric is a consequence.
#include "core/scan/ScanRules.h"

#include "core/run/EvalLoss.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

constexpr size_t kMostMetricsReported = 8;

bool judgedElsewhere(const std::string& dataset)
{
    static const std::set<std::string> others{rf::scalar::kLoss, rf::scalar::kGradNorm, rf::scalar::kParamNorm, rf::kEvalLoss,
                                              rf::kLocalGradNorm, rf::scalar::kSkipped, rf::kWallTime, "epoch", "step"};
    return others.count(dataset) > 0;
}

} // namespace

Status detectNonfiniteMetrics(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    const RunScalars& scalars = context.scalars;
    std::vector<NonfiniteMetricFacts> found;
    for (const TableInfo& table : inputs.info().tables) {
        // Scalar tables only: /scalars, /eval, /scalars_<name>; per-layer tables have names.
        if (!table.names.empty() || table.rows == 0 || table.name == rf::kEvents)
            continue;
        const std::vector<int64_t>& steps = inputs.steps(table.name.c_str());
        const bool trainingTable = table.name == rf::kScalars;
        for (const std::string& dataset : table.datasets) {
            if (judgedElsewhere(dataset))
                continue;
            auto values = inputs.readSeries(table.name, dataset);
            if (!values)
                continue; // a dataset of strings or of another shape: not a metric
            NonfiniteMetricFacts facts;
            facts.metric = dataset;
            facts.table = table.name;
            const size_t rows = std::min(values->size(), steps.size());
            for (size_t r = 0; r < rows; ++r) {
                const int64_t step = steps[r];
                if (context.blowupOnsetStep && step >= *context.blowupOnsetStep)
                    break;
                // A NaN training loss or gradient norm at the same row explains the metric's.
                if (trainingTable && r < scalars.steps.size() && scalars.rowNonfinite(r))
                    continue;
                ++facts.values;
                if (std::isfinite((*values)[r]))
                    continue;
                if (facts.nonfinite == 0)
                    facts.firstStep = step;
                facts.lastStep = step;
                ++facts.nonfinite;
                facts.nan = facts.nan || std::isnan((*values)[r]);
            }
            if (facts.nonfinite > 0)
                found.push_back(std::move(facts));
        }
    }
    for (size_t i = 0; i < found.size() && i < kMostMetricsReported; ++i) {
        const NonfiniteMetricFacts& facts = found[i];
        Incident incident;
        incident.kind = IncidentKind::NonfiniteMetric;
        incident.severity = Severity::Info;
        incident.onsetStep = facts.firstStep;
        incident.evidence.series = facts.table + "/" + facts.metric;
        incident.evidence.windowBeginStep = facts.firstStep;
        incident.evidence.windowEndStep = facts.lastStep;
        incident.evidence.count = facts.nonfinite;
        incident.evidence.note = facts.metric + " non-finite on " + std::to_string(facts.nonfinite) + " of " +
                                 std::to_string(facts.values) + " logged values";
        if (i + 1 == kMostMetricsReported && found.size() > kMostMetricsReported)
            incident.evidence.note += " (" + std::to_string(found.size() - kMostMetricsReported) +
                                      " more metrics are non-finite too)";
        applyDiagnosis(incident, diagnoseNonfiniteMetric(facts));
        context.report.incidents.push_back(std::move(incident));
    }
    return Status::success();
}

} // namespace nanscope::scan
