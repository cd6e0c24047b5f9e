#pragma once

#include "core/Progress.h"
#include "core/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

class RunSource;

// What a heatmap cell shows.
enum class HeatmapQuantity {
    GradNormLog10,      // log10 of /layers/grad_norm
    ActivationAbsMax,   // log10 of max(|min|, |max|) from /activations
    NonfiniteCount,     // /layers/grad_nonfinite (or param_nonfinite), or /activations nan + inf
    ParamNormLog10      // log10 of /layers/param_norm: what a run read from checkpoints has
};

// A column x step matrix downsampled to at most `maxBins` step bins. Each bin keeps the
// extreme of its steps (largest value), and a bin holding any non-finite value is non-finite
// itself (NaN): one NaN step never disappears, however far the view is zoomed out.
struct LayerHeatmap
{
    HeatmapQuantity quantity = HeatmapQuantity::GradNormLog10;
    std::vector<std::string> rows;      // layer or module names, top to bottom
    std::vector<int64_t> binFirstStep;  // first step of each bin
    std::vector<int64_t> binLastStep;   // last step of each bin
    std::vector<float> values;          // [rows.size() x bins], row-major; NaN = non-finite data
    std::vector<uint8_t> nonfinite;     // same shape: 1 where any step of the bin was non-finite

    size_t bins() const { return binFirstStep.size(); }
    float at(size_t row, size_t bin) const { return values[row * bins() + bin]; }
};

// Reads the table in row blocks (never the whole matrix at once) and bins it.
// The heatmap a run opens on: gradient norms where they were logged, else parameter norms (a run
// read from a folder of checkpoints has no gradients).
HeatmapQuantity defaultHeatmapQuantity(const RunSource& reader);

Result<LayerHeatmap> buildLayerHeatmap(const RunSource& reader, HeatmapQuantity quantity, size_t maxBins,
                                       const ProgressCallback& progress = {});

} // namespace nanscope
