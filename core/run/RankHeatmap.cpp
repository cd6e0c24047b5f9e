#include "core/run/RankHeatmap.h"

#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope {

namespace rf = runformat;

std::string rankRowName(int rank)
{
    return "rank " + std::to_string(rank);
}

int rankOfRowName(const std::string& name)
{
    const std::string prefix = "rank ";
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 9)
        return -1;
    const std::string digits = name.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::stoi(digits);
}

namespace {

struct RankRows
{
    std::vector<int64_t> steps;
    std::vector<double> values; // local (or all-reduced) gradient norm
    std::vector<double> loss;
};

bool hasDataset(const TableInfo* table, const char* dataset)
{
    return table && std::find(table->datasets.begin(), table->datasets.end(), dataset) != table->datasets.end();
}

} // namespace

Result<LayerHeatmap> buildRankHeatmap(const RankSet& ranks, HeatmapQuantity quantity, size_t maxBins)
{
    if (quantity != HeatmapQuantity::GradNormLog10 && quantity != HeatmapQuantity::NonfiniteCount)
        quantity = HeatmapQuantity::GradNormLog10; // the only two a rank has
    std::vector<RankRows> rows(ranks.members().size());
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < rows.size(); ++i) {
        const RankMember& member = ranks.members()[i];
        if (!member.run)
            continue;
        const TableInfo* scalars = member.run->table(rf::kScalars);
        if (!scalars)
            continue;
        const char* norm = hasDataset(scalars, rf::kLocalGradNorm) ? rf::kLocalGradNorm
                           : hasDataset(scalars, rf::scalar::kGradNorm) ? rf::scalar::kGradNorm
                                                                   : nullptr;
        auto loss = member.run->readSeries(rf::kScalars, rf::scalar::kLoss);
        if (!loss)
            return Error{loss.error()};
        rows[i].loss = std::move(*loss);
        if (norm) {
            auto values = member.run->readSeries(rf::kScalars, norm);
            if (!values)
                return Error{values.error()};
            rows[i].values = std::move(*values);
        }
        rows[i].steps = member.run->steps(rf::kScalars);
        if (!rows[i].steps.empty()) {
            first = std::min(first, rows[i].steps.front());
            last = std::max(last, rows[i].steps.back());
        }
    }
    LayerHeatmap heatmap;
    heatmap.quantity = quantity;
    for (const RankMember& member : ranks.members())
        heatmap.rows.push_back(rankRowName(member.rank));
    if (first > last || maxBins == 0)
        return heatmap;
    const int64_t span = last - first + 1;
    const int64_t width = std::max<int64_t>(1, (span + int64_t(maxBins) - 1) / int64_t(maxBins));
    const size_t bins = size_t((span + width - 1) / width);
    for (size_t b = 0; b < bins; ++b) {
        heatmap.binFirstStep.push_back(first + int64_t(b) * width);
        heatmap.binLastStep.push_back(std::min(last, first + int64_t(b + 1) * width - 1));
    }
    const float kEmpty = -std::numeric_limits<float>::infinity(); // no step of the rank in the bin yet
    heatmap.values.assign(rows.size() * bins, kEmpty);
    heatmap.nonfinite.assign(rows.size() * bins, 0);
    for (size_t r = 0; r < rows.size(); ++r) {
        const RankRows& rank = rows[r];
        for (size_t row = 0; row < rank.steps.size(); ++row) {
            const size_t cell = r * bins + size_t((rank.steps[row] - first) / width);
            const double norm = row < rank.values.size() ? rank.values[row] : 0.0;
            const double loss = row < rank.loss.size() ? rank.loss[row] : 0.0;
            const bool bad = !std::isfinite(norm) || !std::isfinite(loss);
            float& value = heatmap.values[cell];
            if (quantity == HeatmapQuantity::NonfiniteCount) {
                value = (value == kEmpty ? 0.f : value) + (bad ? 1.f : 0.f);
                continue;
            }
            if (heatmap.nonfinite[cell])
                continue;
            if (bad || (row < rank.values.size() && !std::isfinite(norm))) {
                heatmap.nonfinite[cell] = 1;
                value = std::numeric_limits<float>::quiet_NaN();
            } else if (row < rank.values.size() && norm > 0) {
                value = std::max(value, float(std::log10(norm)));
            }
        }
    }
    // Empty bins at the bottom of the scale: the lowest value shown.
    float lowest = std::numeric_limits<float>::infinity();
    for (float v : heatmap.values)
        if (std::isfinite(v))
            lowest = std::min(lowest, v);
    if (!std::isfinite(lowest))
        lowest = 0.f;
    for (float& v : heatmap.values)
        if (v == kEmpty)
            v = lowest;
    return heatmap;
}

} // namespace nanscope
