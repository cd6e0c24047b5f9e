#include "core/scan/LayerBlame.h"

#include "core/run/LayerNames.h"
#include "core/run/RunFormat.h"
#include "core/scan/Onset.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

ForwardOrder::ForwardOrder(const TableInfo* activations, const TableInfo* layers)
{
    if (activations)
        for (size_t i = 0; i < activations->names.size(); ++i)
            m_modules.emplace(activations->names[i], int(i));
    if (layers)
        for (size_t i = 0; i < layers->names.size(); ++i)
            m_parameters.emplace(layers->names[i], int(i));
}

int ForwardOrder::module(const std::string& name) const
{
    auto it = m_modules.find(name);
    return it != m_modules.end() ? 2 * it->second * kSpread : 2 * kSpread * int(m_modules.size());
}

int ForwardOrder::parameter(const std::string& name) const
{
    const int index = m_parameters.count(name) ? m_parameters.at(name) : 0;
    if (auto it = m_modules.find(layernames::owningModule(name)); it != m_modules.end())
        return 2 * it->second * kSpread + 1 + index % kSpread;
    // A module without logged activations: keep parameter order, after the known modules.
    return 2 * kSpread * int(m_modules.size()) + index;
}

void orderLayerOnsets(std::vector<RankedOnset>& onsets, double tieDecades)
{
    std::sort(onsets.begin(), onsets.end(), [](const auto& x, const auto& y) {
        if (x.first.onsetStep != y.first.onsetStep)
            return x.first.onsetStep < y.first.onsetStep;
        if (x.first.magnitudeDecades != y.first.magnitudeDecades)
            return x.first.magnitudeDecades > y.first.magnitudeDecades;
        return x.second < y.second;
    });
    size_t i = 0;
    while (i < onsets.size()) {
        size_t j = i + 1;
        const double top = onsets[i].first.magnitudeDecades;
        while (j < onsets.size() && onsets[j].first.onsetStep == onsets[i].first.onsetStep &&
               (onsets[j].first.magnitudeDecades == top || top - onsets[j].first.magnitudeDecades <= tieDecades))
            ++j;
        std::sort(onsets.begin() + i, onsets.begin() + j,
                  [](const auto& x, const auto& y) { return x.second < y.second; });
        i = j;
    }
}

std::optional<LayerOnset> layerOnset(const LayerColumn& column, int64_t onsetStep, const ScanConfig& config)
{
    const LogSeries& s = column.series;
    if (s.empty())
        return std::nullopt;
    std::vector<double> before;
    for (size_t r = 0; r < s.size(); ++r)
        if (s.finite[r] && s.steps[r] < onsetStep)
            before.push_back(s.log[r]);
    const double baseline = before.size() >= 3 ? medianOf(before) : kNaN;
    const std::vector<double> m = smoothed(s, 0, s.size(), config.smoothingRows);
    size_t badRow = s.size();
    for (size_t r = 0; r < s.size(); ++r) {
        const bool isBad = !s.finite[r]              ? true
                           : std::isfinite(baseline) ? m[r] - baseline >= config.layerDecades
                                                     : false;
        if (isBad) {
            badRow = r;
            break;
        }
    }
    if (badRow == s.size())
        return std::nullopt;
    const Rise rise = findOnset(s, 0, badRow, config);
    const double base = std::isfinite(rise.baseline) ? rise.baseline : baseline;
    // Layers are compared by when their rise first reached half of layer_decades (x3 for
    // the default): one yardstick for all, whatever each layer's own noise, so a quiet
    // layer's wobble a step early does not count as going bad first.
    size_t onsetRow = std::min(rise.onsetRow, badRow);
    while (onsetRow < badRow && s.finite[onsetRow] &&
           !(std::isfinite(base) && s.log[onsetRow] - base >= 0.5 * config.layerDecades))
        ++onsetRow;
    LayerOnset onset{column.name, column.source, s.steps[onsetRow], 0.0, false, std::nullopt};
    // Magnitude: how far above its baseline the layer was at its onset step.
    double magnitude = !s.finite[onsetRow] ? kInf : std::isfinite(base) ? s.log[onsetRow] - base : 0.0;
    for (size_t r = onsetRow; r < s.size(); ++r)
        if (!s.finite[r]) {
            onset.nonfinite = true;
            onset.nonfiniteStep = s.steps[r];
            break;
        }
    onset.magnitudeDecades = std::isfinite(magnitude) || magnitude == kInf ? magnitude : 0.0;
    return onset;
}

Result<std::vector<RankedOnset>> blameLayers(const ScanInputs& inputs, const ForwardOrder& order,
                                             const ScanConfig& config, int64_t windowBeginStep, int64_t onsetStep,
                                             int64_t windowEndStep)
{
    std::vector<RankedOnset> onsets;
    if (inputs.table(rf::kLayers) && inputs.hasDataset(rf::kLayers, rf::column::kGradNorm)) {
        // h rows past the window's end, so that the centred median sees what followed.
        auto visited = inputs.visitWindow(rf::kLayers, rf::column::kGradNorm, rf::column::kGradNonfinite, nullptr,
                                          windowBeginStep, windowEndStep, config.smoothingRows, [&](const LayerColumn& column) {
                                              if (auto onset = layerOnset(column, onsetStep, config))
                                                  onsets.push_back({*onset, order.parameter(column.name)});
                                          });
        if (!visited)
            return Error{visited.error()};
    }
    if (inputs.table(rf::kActivations)) {
        auto visited = inputs.visitWindow(rf::kActivations, rf::column::kMax, rf::column::kNan, rf::column::kInf,
                                          windowBeginStep, windowEndStep, config.smoothingRows, [&](const LayerColumn& column) {
                                              if (auto onset = layerOnset(column, onsetStep, config))
                                                  onsets.push_back({*onset, order.module(column.name)});
                                          });
        if (!visited)
            return Error{visited.error()};
    }
    orderLayerOnsets(onsets, config.tieDecades);
    return onsets;
}

void fillLayers(Incident& incident, const std::vector<RankedOnset>& onsets, int64_t maxLayersListed)
{
    for (const auto& [onset, position] : onsets) {
        if (std::find(incident.layers.begin(), incident.layers.end(), onset.name) != incident.layers.end())
            continue;
        if (incident.layers.size() >= size_t(maxLayersListed))
            break;
        incident.layers.push_back(onset.name);
        incident.evidence.layerOnsets.push_back(onset);
    }
}

} // namespace nanscope::scan
