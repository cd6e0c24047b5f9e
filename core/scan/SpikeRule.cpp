// Isolated jumps of the gradient norm (or loss) far above their running median that come back:
// one unusual batch. Not inside a blow-up or a recovered non-finite burst, not during warm-up.
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

#include "core/scan/Recovery.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

struct SpikeRow
{
    size_t row;
    double excess; // decades above the running median
    bool recovered;
    std::string series;
    double baseline;
    double value;
};

// The spikes of one series, appended to `spikes`. A spike must also rise by `minimumRise` in the
// series' own units (0: any rise), and reach `minimumLevel` (0: any level).
void findSpikes(const ScanContext& context, const LogSeries& s, const std::string& name, double minimumRise,
                double minimumLevel, std::vector<SpikeRow>& spikes)
{
    const ScanConfig& config = context.config;
    if (s.empty())
        return;
    std::vector<double> window; // the last spikeBaselineRows finite, non-spike values
    const size_t width = size_t(std::max<int64_t>(3, config.spikeBaselineRows));
    std::vector<double> scratch;
    // Not into a blow-up: its first rows are its onset, not a spike.
    const size_t end =
        context.blowupOnsetRow ? (*context.blowupOnsetRow > 2 ? *context.blowupOnsetRow - 2 : 0) : s.size();
    auto remember = [&](double value) {
        window.push_back(value);
        if (window.size() > width)
            window.erase(window.begin());
    };
    for (size_t r = 0; r < end; ++r) {
        if (!s.finite[r] || context.nearRecoveredBurst(r))
            continue;
        if (s.steps[r] < s.steps.front() + config.warmupSteps) {
            // Early training is turbulent by nature: learn the baseline, report nothing short of a
            // jump no warm-up explains (x100 over the last few rows, back at once). Its baseline is
            // the last rows alone: over a warm-up the longer median still holds the early levels.
            if (window.size() >= 3) {
                scratch.assign(window.end() - long(std::min<size_t>(window.size(), 5)), window.end());
                const double recent = medianInPlace(scratch);
                const double excess = s.log[r] - recent;
                if (excess >= config.warmupSpikeDecades && s.raw[r] - std::pow(10.0, recent) >= minimumRise) {
                    std::vector<double> after;
                    for (size_t k = r + 1; k < s.size() && after.size() < 5 && k <= r + size_t(config.recoveryRows); ++k)
                        if (s.finite[k])
                            after.push_back(s.log[k]);
                    if (!after.empty() && medianOf(after) <= recent + 0.5 * config.spikeDecades) {
                        spikes.push_back({r, excess, true, name, std::pow(10.0, recent), s.raw[r]});
                        continue; // keep the spike out of the baseline
                    }
                }
            }
            remember(s.log[r]);
            continue;
        }
        // The median is at least the window's least value: a row that does not rise spikeDecades
        // above that is no spike and needs no median (nearly every row of a run).
        if (window.size() >= width / 2 &&
            s.log[r] - *std::min_element(window.begin(), window.end()) >= config.spikeDecades) {
            scratch.assign(window.begin(), window.end());
            const double median = medianInPlace(scratch);
            const double excess = s.log[r] - median;
            double noise = 0;
            if (excess >= config.spikeDecades) // the noise only matters past that
                noise = noiseAroundInPlace(scratch, median);
            if (excess >= std::max(config.spikeDecades, config.spikeNoiseSigmas * noise) &&
                s.raw[r] - std::pow(10.0, median) >= minimumRise && s.raw[r] >= minimumLevel) {
                // Recovered: the next rows are back near the median.
                std::vector<double> after;
                for (size_t k = r + 1; k < s.size() && after.size() < 10 && k <= r + size_t(config.recoveryRows); ++k)
                    if (s.finite[k])
                        after.push_back(s.log[k]);
                // ... or the loss came back, however long the gradient norm stays up (Recovery.h).
                const bool recovered =
                    (!after.empty() && medianOf(after) <= median + std::max(0.5 * config.spikeDecades, 3 * noise)) ||
                    judgeRecovery(context, r, r).outcome == JumpOutcome::Recovered;
                const bool endOfLog = r + 1 + size_t(std::min<int64_t>(config.recoveryRows, 10)) > s.size();
                if (recovered || endOfLog)
                    spikes.push_back({r, excess, recovered, name, std::pow(10.0, median), s.raw[r]});
                continue; // keep the spike out of the baseline
            }
        }
        remember(s.log[r]);
    }
}

// One incident for the spikes [i, j), all within burst_gap_steps of each other.
Incident spikeIncident(const ScanContext& context, const std::vector<SpikeRow>& spikes, size_t i, size_t j)
{
    const std::vector<int64_t>& steps = context.scalars.steps;
    size_t worst = i;
    bool recovered = true;
    std::set<std::string> series;
    for (size_t k = i; k < j; ++k) {
        if (spikes[k].excess > spikes[worst].excess)
            worst = k;
        recovered = recovered && spikes[k].recovered;
        series.insert(spikes[k].series);
    }
    const SpikeRow& top = spikes[worst];
    Incident incident;
    incident.kind = IncidentKind::Spike;
    incident.severity = Severity::Warning;
    incident.onsetStep = steps[spikes[i].row];
    auto& e = incident.evidence;
    e.series.clear();
    for (const auto& name : series)
        e.series += (e.series.empty() ? "" : ", ") + name;
    e.windowBeginStep = incident.onsetStep;
    e.windowEndStep = steps[spikes[j - 1].row];
    e.baseline = top.baseline;
    e.peak = top.value;
    e.jumpRatio = std::pow(10.0, top.excess);
    e.count = int64_t(j - i);
    if (!recovered)
        e.note = "not yet recovered at the end of the log";
    applyDiagnosis(incident, diagnoseSpike(SpikeFacts{incident.onsetStep, e.series, *e.jumpRatio, recovered,
                                                      context.batchNote(incident.onsetStep)}));
    return incident;
}

// Where a series stood when training began: the median of its first 10 finite, positive rows
// (0 without any).
double startingLevel(const LogSeries& s)
{
    std::vector<double> first;
    for (size_t r = 0; r < s.size() && first.size() < 10; ++r)
        if (s.finite[r] && s.raw[r] > 0)
            first.push_back(s.raw[r]);
    return first.empty() ? 0.0 : medianOf(first);
}

} // namespace

Status detectSpikes(ScanContext& context)
{
    const RunScalars& scalars = context.scalars;
    std::vector<SpikeRow> spikes;
    // A loss spike must rise by spikeLossFloor of the starting loss: bumps below it are large only
    // in ratio, on a loss near zero. A gradient-norm spike must reach the gradient norm's starting
    // level: a converged model's gradient is orders of magnitude below it, and one sample that no
    // longer fits moves it x100 while the loss stays at its floor (a mixture of experts with noisy
    // routing does this every few hundred steps).
    const double lossFloor = context.config.spikeLossFloor * startingLevel(scalars.loss);
    findSpikes(context, scalars.primary(), scalars.primaryName, scalars.gradNorm.empty() ? lossFloor : 0.0,
               scalars.gradNorm.empty() ? 0.0 : startingLevel(scalars.gradNorm), spikes);
    if (!scalars.gradNorm.empty()) {
        bool positive = true;
        for (size_t r = 0; r < scalars.loss.size() && positive; ++r)
            positive = !scalars.loss.finite[r] || scalars.loss.raw[r] > 0;
        if (positive)
            findSpikes(context, scalars.loss, rf::scalarSeries(rf::scalar::kLoss), lossFloor, 0.0, spikes);
    }
    std::sort(spikes.begin(), spikes.end(), [](const SpikeRow& x, const SpikeRow& y) { return x.row < y.row; });
    // Layer blame reads a window per spike: only for the first few of a spiky run.
    constexpr int kSpikesBlamed = 20;
    int blamed = 0;
    size_t i = 0;
    while (i < spikes.size()) {
        size_t j = i + 1;
        // One burst: spikes within burst_gap_steps, or on logged rows next to each other (a loss logged
        // every 10 steps that stays up is one event, not one per row).
        while (j < spikes.size() &&
               (scalars.steps[spikes[j].row] - scalars.steps[spikes[j - 1].row] <= context.config.burstGapSteps ||
                spikes[j].row <= spikes[j - 1].row + 1))
            ++j;
        Incident incident = spikeIncident(context, spikes, i, j);
        if (++blamed <= kSpikesBlamed) {
            const size_t from = spikes[i].row > 30 ? spikes[i].row - 30 : 0;
            // A failed read only costs the spike its layer names.
            if (auto layers = blameLayers(context.inputs, context.order, context.config, scalars.steps[from],
                                          incident.onsetStep, incident.evidence.windowEndStep))
                fillLayers(incident, *layers, context.config.maxLayersListed);
        }
        context.report.incidents.push_back(std::move(incident));
        i = j;
    }
    return Status::success();
}

} // namespace nanscope::scan
