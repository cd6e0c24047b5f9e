#pragma once

// The rank x step heatmap of a multi-rank run, in the layer heatmap's binned form (LayerHeatmap:
// one row per rank, "rank 0" at the top), so that the heatmap view shows it unchanged.
//   GradNormLog10   log10 of each rank's local gradient norm (before the all-reduce; the
//                   all-reduced one for a rank that did not log it), the bin's largest; a bin with
//                   a non-finite value is non-finite.
//   NonfiniteCount  the steps of the bin at which the rank's loss or local gradient norm was NaN/Inf.
// A bin in which a rank logged no step (a rank that stopped) is drawn at the bottom of the scale:
// not a value, and never the non-finite colour.

#include "core/Result.h"
#include "core/run/LayerHeatmap.h"

#include <string>

namespace nanscope {

class RankSet;

// "rank 3" for the heatmap's rows; the view's row clicks give it back (rankOfRowName).
std::string rankRowName(int rank);
// The rank of a row name, or -1.
int rankOfRowName(const std::string& name);

Result<LayerHeatmap> buildRankHeatmap(const RankSet& ranks, HeatmapQuantity quantity, size_t maxBins);

} // namespace nanscope
