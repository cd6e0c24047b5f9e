#include "core/run/LayerHeatmap.h"

#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope {

namespace rf = runformat;

namespace {

constexpr int64_t kRowsPerBlock = 4096;

struct Source
{
    const char* table;
    std::vector<const char*> datasets; // summed (counts) or combined by |max| (ranges)
};

Source sourceFor(const RunSource& reader, HeatmapQuantity quantity)
{
    switch (quantity) {
    case HeatmapQuantity::GradNormLog10:
        return {rf::kLayers, {rf::column::kGradNorm}};
    case HeatmapQuantity::ActivationAbsMax:
        return {rf::kActivations, {rf::column::kMin, rf::column::kMax}};
    case HeatmapQuantity::NonfiniteCount: {
        const TableInfo* layers = reader.table(rf::kLayers);
        for (const char* dataset : {"grad_nonfinite", "param_nonfinite"})
            if (layers && std::count(layers->datasets.begin(), layers->datasets.end(), dataset))
                return {rf::kLayers, {dataset}};
        return {rf::kActivations, {rf::column::kNan, rf::column::kInf}};
    }
    case HeatmapQuantity::ParamNormLog10:
        return {rf::kLayers, {rf::column::kParamNorm}};
    }
    return {rf::kLayers, {rf::column::kGradNorm}};
}

} // namespace

HeatmapQuantity defaultHeatmapQuantity(const RunSource& reader)
{
    const TableInfo* layers = reader.table(rf::kLayers);
    const bool gradients = layers && std::count(layers->datasets.begin(), layers->datasets.end(), "grad_norm");
    return gradients || !layers ? HeatmapQuantity::GradNormLog10 : HeatmapQuantity::ParamNormLog10;
}

Result<LayerHeatmap> buildLayerHeatmap(const RunSource& reader, HeatmapQuantity quantity, size_t maxBins,
                                       const ProgressCallback& progress)
{
    const Source source = sourceFor(reader, quantity);
    const TableInfo* table = reader.table(source.table);
    if (!table)
        return Error{reader.info().logPath + ": the run has no /" + source.table + " table for this heatmap"};
    for (const char* d : source.datasets)
        if (!std::count(table->datasets.begin(), table->datasets.end(), d))
            return Error{reader.info().logPath + ": the run has no /" + source.table + "/" + d};

    LayerHeatmap map;
    map.quantity = quantity;
    map.rows = table->names;
    const auto& steps = reader.steps(source.table);
    const int64_t rows = table->rows;
    const size_t columns = table->names.size();
    const size_t bins = std::max<size_t>(1, std::min<size_t>(maxBins, size_t(rows)));
    const double rowsPerBin = rows > 0 ? double(rows) / double(bins) : 1.0;
    map.binFirstStep.assign(bins, 0);
    map.binLastStep.assign(bins, 0);
    map.values.assign(columns * bins, -std::numeric_limits<float>::infinity());
    map.nonfinite.assign(columns * bins, 0);
    std::vector<uint8_t> hasValue(columns * bins, 0);
    for (size_t b = 0; b < bins && rows > 0; ++b) {
        map.binFirstStep[b] = steps[size_t(double(b) * rowsPerBin)];
        map.binLastStep[b] = steps[std::min<size_t>(size_t(rows) - 1, size_t(double(b + 1) * rowsPerBin) - 1)];
    }

    const bool counts = quantity == HeatmapQuantity::NonfiniteCount;
    for (int64_t begin = 0; begin < rows; begin += kRowsPerBlock) {
        if (!reportProgress(progress, double(begin) / double(rows), "heatmap"))
            return Error{"cancelled"};
        const int64_t count = std::min(kRowsPerBlock, rows - begin);
        std::vector<std::vector<float>> blocks;
        for (const char* d : source.datasets) {
            auto block = reader.readBlock(source.table, d, begin, count);
            if (!block)
                return Error{block.error()};
            blocks.push_back(std::move(*block));
        }
        for (int64_t r = 0; r < count; ++r) {
            const size_t bin = std::min(bins - 1, size_t(double(begin + r) / rowsPerBin));
            for (size_t c = 0; c < columns; ++c) {
                const size_t at = size_t(r) * columns + c;
                float value = 0;
                bool finite = true;
                if (counts) {
                    for (const auto& b : blocks)
                        value += std::isfinite(b[at]) ? b[at] : 0.f;
                } else if (quantity == HeatmapQuantity::ActivationAbsMax) {
                    const float lo = blocks[0][at], hi = blocks[1][at];
                    finite = std::isfinite(lo) && std::isfinite(hi);
                    value = std::max(std::fabs(lo), std::fabs(hi));
                } else {
                    value = blocks[0][at];
                    finite = std::isfinite(value);
                }
                const size_t cell = c * bins + bin;
                if (!finite) {
                    map.nonfinite[cell] = 1;
                    continue;
                }
                if (!counts)
                    value = value > 0 ? std::log10(value) : -std::numeric_limits<float>::infinity();
                map.values[cell] = std::max(map.values[cell], value);
                hasValue[cell] = 1;
            }
        }
    }
    // Non-finite wins over any finite extreme in the same bin; zeros on a log scale are floored.
    float floor = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < map.values.size(); ++i)
        if (hasValue[i] && std::isfinite(map.values[i]))
            floor = std::min(floor, map.values[i]);
    for (size_t i = 0; i < map.values.size(); ++i) {
        if (map.nonfinite[i])
            map.values[i] = std::numeric_limits<float>::quiet_NaN();
        else if (!hasValue[i] || !std::isfinite(map.values[i]))
            map.values[i] = std::isfinite(floor) ? floor : 0.f;
    }
    reportProgress(progress, 1.0, "heatmap");
    return map;
}

} // namespace nanscope

namespace nanscope {

} // namespace nanscope
