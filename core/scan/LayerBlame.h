#pragma once

// Which layer went bad first: per-layer onsets measured against each layer's own baseline, put in
// forward-pass order when they tie.

#include "core/Result.h"
#include "core/run/RunSource.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"
#include "core/scan/ScanInputs.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nanscope::scan {

// Forward-pass position of a parameter or module: the module's index among the activations
// (the forward order), parameters right after their module's output.
class ForwardOrder
{
public:
    ForwardOrder(const TableInfo* activations, const TableInfo* layers);

    int module(const std::string& name) const;
    int parameter(const std::string& name) const;

private:
    static constexpr int kSpread = 1 << 12;
    std::map<std::string, int> m_modules;
    std::map<std::string, int> m_parameters;
};

// A layer's onset with its forward-pass position, for ordering.
using RankedOnset = std::pair<LayerOnset, int>;

// First bad first: earliest onset; at the same step the larger magnitude, except that magnitudes
// within tieDecades of each other are a tie, and then the layer earlier in the forward pass
// comes first (within one step, the forward pass is the order in which values were computed).
void orderLayerOnsets(std::vector<RankedOnset>& onsets, double tieDecades);

// Where one layer's column went bad: above its own baseline (the median before `onsetStep`) by
// layer_decades, or non-finite. Nothing when it never did.
std::optional<LayerOnset> layerOnset(const LayerColumn& column, int64_t onsetStep, const ScanConfig& config);

// Per-layer onsets over [windowBeginStep, windowEndStep]: gradient norms (and their non-finite
// counts) and activation ranges, each measured against its own baseline before `onsetStep`.
// Ordered first bad first.
Result<std::vector<RankedOnset>> blameLayers(const ScanInputs& inputs, const ForwardOrder& order,
                                             const ScanConfig& config, int64_t windowBeginStep, int64_t onsetStep,
                                             int64_t windowEndStep);

// Appends the layers of `onsets` the incident does not name yet, up to maxLayersListed.
void fillLayers(Incident& incident, const std::vector<RankedOnset>& onsets, int64_t maxLayersListed);

} // namespace nanscope::scan
