// Ranks whose own loss or local gradient norm departs from the other ranks' at the same steps.
// The replicas share their weights, so their local values differ only by their batches: at each
// step the ranks' median and spread (log10 scale) are robust to one odd rank, and a rank beyond
// both rank_divergence_decades and six robust noise widths departs.
#include "core/run/RunFormat.h"
#include "core/scan/Diagnosis.h"
#include "core/scan/RankScan.h"
#include "core/scan/RobustStats.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// A median of two says nothing about which one is odd.
constexpr size_t kFewestRanksToCompare = 3;
constexpr double kNoiseWidths = 6.0;

struct Departures
{
    int64_t firstStep = 0;
    int64_t steps = 0;
    double worstDecades = 0;
    int64_t worstStep = 0;
};

void findDepartures(RankScanContext& context, const char* seriesName,
                    const std::vector<double> RankSeries::*values)
{
    const auto& all = context.series;
    std::vector<int64_t> steps;
    for (const RankSeries& rank : all)
        if (rank.readable && !(rank.*values).empty())
            steps.insert(steps.end(), rank.steps.begin(), rank.steps.begin() + (rank.*values).size());
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());

    std::vector<size_t> cursor(all.size(), 0);
    std::vector<Departures> found(all.size());
    std::vector<std::pair<size_t, double>> atStep;
    std::vector<double> scratch;
    for (int64_t step : steps) {
        atStep.clear();
        for (size_t i = 0; i < all.size(); ++i) {
            const std::vector<double>& series = all[i].*values;
            const std::vector<int64_t>& rankSteps = all[i].steps;
            size_t& row = cursor[i];
            while (row < series.size() && rankSteps[row] < step)
                ++row;
            if (row < series.size() && rankSteps[row] == step && std::isfinite(series[row]) && series[row] != 0)
                atStep.emplace_back(i, log10Abs(series[row]));
        }
        if (atStep.size() < kFewestRanksToCompare)
            continue;
        scratch.clear();
        for (const auto& entry : atStep)
            scratch.push_back(entry.second);
        const double median = medianInPlace(scratch);
        scratch.clear();
        for (const auto& entry : atStep)
            scratch.push_back(entry.second);
        const double noise = noiseAroundInPlace(scratch, median);
        const double threshold = std::max(context.config.rankDivergenceDecades, kNoiseWidths * noise);
        for (const auto& [index, value] : atStep) {
            const double decades = value - median;
            if (std::fabs(decades) < threshold)
                continue;
            Departures& d = found[index];
            if (d.steps == 0)
                d.firstStep = step;
            ++d.steps;
            if (std::fabs(decades) > std::fabs(d.worstDecades)) {
                d.worstDecades = decades;
                d.worstStep = step;
            }
        }
    }
    for (size_t i = 0; i < all.size(); ++i) {
        const Departures& d = found[i];
        if (d.steps == 0)
            continue;
        RankDivergenceFacts facts;
        facts.rank = all[i].rank;
        facts.series = seriesName;
        facts.firstStep = d.firstStep;
        facts.steps = d.steps;
        facts.decades = d.worstDecades;
        facts.worstStep = d.worstStep;
        facts.batchNote = savedBatchNote(all[i].member->run->info(), d.worstStep);
        Incident incident;
        incident.kind = IncidentKind::RankDivergence;
        incident.severity = Severity::Warning;
        incident.rank = all[i].rank;
        incident.onsetStep = d.firstStep;
        incident.evidence.series = values == &RankSeries::loss ? rf::scalarSeries(rf::scalar::kLoss) : rf::scalarSeries(rf::kLocalGradNorm);
        incident.evidence.windowBeginStep = d.firstStep;
        incident.evidence.windowEndStep = d.worstStep;
        incident.evidence.count = d.steps;
        incident.evidence.jumpRatio = std::pow(10.0, std::fabs(d.worstDecades));
        applyDiagnosis(incident, diagnoseRankDivergence(facts));
        context.incidents.push_back(std::move(incident));
    }
}

} // namespace

Status detectRankDivergence(RankScanContext& context)
{
    findDepartures(context, "local gradient norm", &RankSeries::localGradNorm);
    findDepartures(context, "local loss", &RankSeries::loss);
    return Status::success();
}

} // namespace nanscope::scan
