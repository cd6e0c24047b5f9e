#include "core/run/LayerHeatmap.h"
#include "core/run/MeasuredCell.h"

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
        for (const char* dataset : {rf::column::kGradNonfinite, rf::column::kParamNonfinite})
            if (layers && std::count(layers->datasets.begin(), layers->datasets.end(), dataset))
                return {rf::kLayers, {dataset}};
        return {rf::kActivations, {rf::column::kNan, rf::column::kInf}};
    }
    case HeatmapQuantity::ParamNormLog10:
        return {rf::kLayers, {rf::column::kParamNorm}};
    }
    return {rf::kLayers, {rf::column::kGradNorm}};
}

// One row folded into a bin's per-layer maximum, raw; whether the bin saw a finite value and a
// non-finite one. One loop per quantity, free of branches, so that it vectorises.

void foldValues(const float* row, size_t columns, float* binMax, uint8_t* finiteSeen, uint8_t* nonfiniteSeen)
{
    for (size_t c = 0; c < columns; ++c) {
        const float value = row[c];
        const bool finite = std::isfinite(value);
        nonfiniteSeen[c] |= uint8_t(!finite);
        finiteSeen[c] |= uint8_t(finite);
        binMax[c] = finite && value > binMax[c] ? value : binMax[c];
    }
}

void foldMagnitudes(const float* low, const float* high, size_t columns, float* binMax, uint8_t* finiteSeen,
                    uint8_t* nonfiniteSeen)
{
    for (size_t c = 0; c < columns; ++c) {
        const bool finite = std::isfinite(low[c]) && std::isfinite(high[c]);
        const float value = std::max(std::fabs(low[c]), std::fabs(high[c]));
        nonfiniteSeen[c] |= uint8_t(!finite);
        finiteSeen[c] |= uint8_t(finite);
        binMax[c] = finite && value > binMax[c] ? value : binMax[c];
    }
}

// The same, for a block that holds a range with no finite figure: such a cell is non-finite only
// when its output had non-finite elements (`nan` + `inf` > 0); with none, no element was measured
// (a module that did not run that step, an expert no token went to) and the cell has no value.
void foldMagnitudesCounted(const float* low, const float* high, const float* nan, const float* inf, size_t columns,
                           float* binMax, uint8_t* finiteSeen, uint8_t* nonfiniteSeen)
{
    for (size_t c = 0; c < columns; ++c) {
        const bool finite = std::isfinite(low[c]) && std::isfinite(high[c]);
        const float value = std::max(std::fabs(low[c]), std::fabs(high[c]));
        const bool measured = !(noElementMeasured(low[c], nan[c], inf[c]) && std::isnan(high[c]));
        nonfiniteSeen[c] |= uint8_t(!finite && measured);
        finiteSeen[c] |= uint8_t(finite);
        binMax[c] = finite && value > binMax[c] ? value : binMax[c];
    }
}

bool holdsNan(const std::vector<float>& block)
{
    return std::any_of(block.begin(), block.end(), [](float v) { return std::isnan(v); });
}

// Counts: the finite values of one or two datasets summed; a count is never itself non-finite.
void foldCounts(const float* first, const float* second, size_t columns, float* binMax, uint8_t* finiteSeen)
{
    for (size_t c = 0; c < columns; ++c) {
        float value = std::isfinite(first[c]) ? first[c] : 0.f;
        if (second)
            value += std::isfinite(second[c]) ? second[c] : 0.f;
        finiteSeen[c] = 1;
        binMax[c] = std::max(binMax[c], value);
    }
}

} // namespace

HeatmapQuantity defaultHeatmapQuantity(const RunSource& reader)
{
    const TableInfo* layers = reader.table(rf::kLayers);
    const bool gradients = layers && std::count(layers->datasets.begin(), layers->datasets.end(), rf::column::kGradNorm);
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

    // Each row's values are folded into the current bin's per-layer maximum, raw and in row order
    // (contiguous, so the loop vectorises); the bin's cells, one per layer and bins apart, are
    // written once per bin and block, and the logarithm taken once per cell (log10 is increasing:
    // the log of the largest value is the largest log). Each block is read into the buffer of
    // the last. Taking the log of every value and writing each to its cell costs the heatmap of
    // bench_gui's 100,000 x 1,000 run about half as much again, beside HDF5's read.
    const bool counts = quantity == HeatmapQuantity::NonfiniteCount;
    const bool logScale = !counts;
    std::vector<std::vector<float>> blocks(source.datasets.size());
    // The output ranges' element counts, read only for a block whose ranges hold a NaN.
    const bool ranges = quantity == HeatmapQuantity::ActivationAbsMax &&
                        std::count(table->datasets.begin(), table->datasets.end(), rf::column::kNan) &&
                        std::count(table->datasets.begin(), table->datasets.end(), rf::column::kInf);
    std::vector<float> nanCounts, infCounts;
    std::vector<float> binMax(columns);
    std::vector<uint8_t> binFinite(columns), binNonfinite(columns);
    const auto resetBin = [&] {
        std::fill(binMax.begin(), binMax.end(), -std::numeric_limits<float>::infinity());
        std::fill(binFinite.begin(), binFinite.end(), 0);
        std::fill(binNonfinite.begin(), binNonfinite.end(), 0);
    };
    const auto flushBin = [&](size_t bin) {
        for (size_t c = 0; c < columns; ++c) {
            const size_t cell = c * bins + bin;
            map.nonfinite[cell] |= binNonfinite[c];
            if (!binFinite[c])
                continue;
            float value = binMax[c];
            if (logScale)
                value = value > 0 ? std::log10(value) : -std::numeric_limits<float>::infinity();
            map.values[cell] = std::max(map.values[cell], value);
            hasValue[cell] = 1;
        }
        resetBin();
    };
    resetBin();
    for (int64_t begin = 0; begin < rows; begin += kRowsPerBlock) {
        if (!reportProgress(progress, double(begin) / double(rows), "heatmap"))
            return Error{"cancelled"};
        const int64_t count = std::min(kRowsPerBlock, rows - begin);
        for (size_t d = 0; d < source.datasets.size(); ++d) {
            auto read = reader.readBlockInto(source.table, source.datasets[d], begin, count, blocks[d]);
            if (!read)
                return Error{read.error()};
        }
        bool counted = false;
        if (ranges && (holdsNan(blocks[0]) || holdsNan(blocks[1]))) {
            for (auto [dataset, block] : {std::pair{rf::column::kNan, &nanCounts}, std::pair{rf::column::kInf, &infCounts}})
                if (auto read = reader.readBlockInto(source.table, dataset, begin, count, *block); !read)
                    return Error{read.error()};
            counted = true;
        }
        size_t bin = std::min(bins - 1, size_t(double(begin) / rowsPerBin));
        for (int64_t r = 0; r < count; ++r) {
            const size_t rowBin = std::min(bins - 1, size_t(double(begin + r) / rowsPerBin));
            if (rowBin != bin) {
                flushBin(bin);
                bin = rowBin;
            }
            const float* first = blocks[0].data() + size_t(r) * columns;
            const float* second = blocks.size() > 1 ? blocks[1].data() + size_t(r) * columns : nullptr;
            if (counts)
                foldCounts(first, second, columns, binMax.data(), binFinite.data());
            else if (second && counted)
                foldMagnitudesCounted(first, second, nanCounts.data() + size_t(r) * columns,
                                      infCounts.data() + size_t(r) * columns, columns, binMax.data(), binFinite.data(),
                                      binNonfinite.data());
            else if (second) // ActivationAbsMax: the larger magnitude of min and max
                foldMagnitudes(first, second, columns, binMax.data(), binFinite.data(), binNonfinite.data());
            else
                foldValues(first, columns, binMax.data(), binFinite.data(), binNonfinite.data());
        }
        flushBin(bin); // a bin that goes on into the next block is flushed again there
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
