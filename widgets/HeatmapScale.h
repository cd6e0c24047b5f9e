#pragma once

// How the heatmap's values map to colours. Over the whole range, a final spike takes the scale
// and the build-up before it reads as one flat colour: a gradual and a sudden blow-up look alike
// Clipped at the 99th percentile, or with each layer over its own range, the growth
// that comes first shows.

#include <cstddef>
#include <vector>

namespace nanscope {

enum class HeatmapScale {
    WholeRange,   // the lowest to the highest finite value
    Percentile99, // the lowest finite value to the 99th percentile; above it, the top colour
    PerLayer,     // each row from its own lowest to its highest finite value, as 0..1
};

struct ScaledHeatmap
{
    std::vector<double> values; // row-major as given; NaN stays NaN (non-finite cells)
    double lower = 0, upper = 1; // the colour range
};

// `values`: rows x bins, row-major (LayerHeatmap::values). Counts are not scaled here: their own
// log scale is the heatmap's (HeatmapView).
ScaledHeatmap scaleHeatmap(const std::vector<float>& values, size_t rows, size_t bins, HeatmapScale scale);

} // namespace nanscope
