#include "core/importers/CheckpointTables.h"

#include "core/run/RunFormat.h"
#include "core/tensor/Tensor.h"

#include <algorithm>
#include <cctype>

namespace nanscope::checkpointtables {

namespace rf = runformat;

namespace {

// "a, b, c and 12 more": a note stays readable for a model of thousands of tensors.
std::string someNames(const std::vector<std::string>& names)
{
    constexpr size_t kShown = 5;
    std::string text;
    for (size_t i = 0; i < names.size() && i < kShown; ++i)
        text += (i ? ", " : "") + names[i];
    if (names.size() > kShown)
        text += " and " + std::to_string(names.size() - kShown) + " more";
    return text;
}

// Row-major [rows x columns] float32, as the run format stores matrices.
template <typename Value>
std::vector<float> matrix(
    const std::vector<const CheckpointFigures*>& rows, const std::vector<std::string>& columns, Value value)
{
    std::vector<float> out;
    out.reserve(rows.size() * columns.size());
    for (const CheckpointFigures* row : rows)
        for (const std::string& column : columns)
            out.push_back(float(value(*row, column)));
    return out;
}

} // namespace

std::map<std::string, BufferFigures> completeBuffers(
    const std::map<std::string, BufferHalves>& halves, std::vector<std::string>& order)
{
    std::map<std::string, BufferFigures> complete;
    std::vector<std::string> kept;
    for (const std::string& module : order) {
        const BufferHalves& half = halves.at(module);
        if (!half.mean || !half.variance)
            continue; // a lone running_mean or running_var is no BatchNorm layer the views know
        complete[module] = BufferFigures { half.mean->min, half.mean->max, half.variance->min, half.variance->max,
            half.mean->nonfinite + half.variance->nonfinite };
        kept.push_back(module);
    }
    order = std::move(kept);
    return complete;
}

bool naturalLess(const std::string& a, const std::string& b)
{
    size_t i = 0, j = 0;
    const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            size_t iEnd = i, jEnd = j;
            while (iEnd < a.size() && digit(a[iEnd]))
                ++iEnd;
            while (jEnd < b.size() && digit(b[jEnd]))
                ++jEnd;
            // Compare the runs as numbers without parsing them (they may exceed 64 bits).
            size_t iStart = i, jStart = j;
            while (iStart + 1 < iEnd && a[iStart] == '0')
                ++iStart;
            while (jStart + 1 < jEnd && b[jStart] == '0')
                ++jStart;
            const std::string x = a.substr(iStart, iEnd - iStart), y = b.substr(jStart, jEnd - jStart);
            if (x.size() != y.size())
                return x.size() < y.size();
            if (x != y)
                return x < y;
            i = iEnd;
            j = jEnd;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

void assembleTables(const std::vector<CheckpointFigures>& rows, CheckpointSeries& series)
{
    const CheckpointFigures& first = rows.front();

    // Columns: what every row holds, with the shape it has in the first row.
    std::vector<std::string> missing, reshaped;
    for (const std::string& name : first.parameterOrder) {
        const std::vector<int64_t>& shape = first.parameters.at(name).shape;
        bool everywhere = true, sameShape = true;
        for (const CheckpointFigures& row : rows) {
            const auto it = row.parameters.find(name);
            everywhere = everywhere && it != row.parameters.end();
            sameShape = sameShape && (it == row.parameters.end() || it->second.shape == shape);
        }
        if (!everywhere)
            missing.push_back(name);
        else if (!sameShape)
            reshaped.push_back(name);
        else
            series.parameters.push_back(name);
    }
    size_t onlyLater = 0;
    for (const CheckpointFigures& row : rows)
        for (const auto& [name, figures] : row.parameters)
            onlyLater += !first.parameters.count(name);
    const std::string firstStep = "step " + std::to_string(first.step);
    if (!missing.empty())
        series.notes.push_back(std::to_string(missing.size()) + " tensors of " + firstStep
            + " are missing from a later checkpoint and are left out: " + someNames(missing));
    if (!reshaped.empty())
        series.notes.push_back(std::to_string(reshaped.size())
            + " tensors change shape between checkpoints and are left out: " + someNames(reshaped));
    if (onlyLater > 0)
        series.notes.push_back(std::to_string(onlyLater) + " tensors of later checkpoints are not in " + firstStep
            + " and are left out (the columns are the tensors every checkpoint holds)");

    series.parametersInModelOrder = first.inModelOrder;
    if (!first.inModelOrder) {
        std::stable_sort(series.parameters.begin(), series.parameters.end(), naturalLess);
        series.notes.push_back(firstStep + ": safetensors files keep no model order; the tensors are in name order");
    }
    for (const std::string& name : series.parameters)
        series.parameterShapes.push_back(first.parameters.at(name).shape);

    std::vector<const CheckpointFigures*> all, updated;
    for (const CheckpointFigures& row : rows) {
        series.steps.push_back(row.step);
        all.push_back(&row);
        if (!row.hasUpdates)
            continue;
        // Every column is in both checkpoints with one shape, so each should have its update.
        const bool complete = std::all_of(series.parameters.begin(), series.parameters.end(),
            [&](const std::string& name) { return row.updates.count(name) > 0; });
        if (!complete) {
            series.warnings.push_back("step " + std::to_string(row.step) + ": the update since step "
                + std::to_string(row.baseStep) + " misses tensors and is left out");
            continue;
        }
        updated.push_back(&row);
        series.updateSteps.push_back(row.step);
        series.updateBaseSteps.push_back(row.baseStep);
    }
    const auto& columns = series.parameters;
    series.layerDatasets[rf::column::kParamNorm] = matrix(
        all, columns, [](const CheckpointFigures& r, const std::string& c) { return r.parameters.at(c).norm; });
    series.layerDatasets[rf::column::kParamNonfinite] = matrix(all, columns,
        [](const CheckpointFigures& r, const std::string& c) { return double(r.parameters.at(c).nonfinite); });
    series.updateDatasets["update_norm"] = matrix(
        updated, columns, [](const CheckpointFigures& r, const std::string& c) { return r.updates.at(c).norm; });
    series.updateDatasets["update_ratio"] = matrix(
        updated, columns, [](const CheckpointFigures& r, const std::string& c) { return r.updates.at(c).ratio; });

    for (const std::string& module : first.bufferOrder) {
        const bool everywhere = std::all_of(
            rows.begin(), rows.end(), [&](const CheckpointFigures& row) { return row.buffers.count(module) > 0; });
        if (everywhere)
            series.buffers.push_back(module);
        else
            series.notes.push_back(firstStep + ": BatchNorm buffers of '" + module
                + "' are missing from a later checkpoint and are left out");
    }
    using Field = double BufferFigures::*;
    const std::pair<const char*, Field> bufferFields[]
        = { { rf::column::kRunningMeanMin, &BufferFigures::meanMin }, { rf::column::kRunningMeanMax, &BufferFigures::meanMax },
              { rf::column::kRunningVarMin, &BufferFigures::varMin }, { rf::column::kRunningVarMax, &BufferFigures::varMax } };
    for (const auto& [dataset, field] : bufferFields)
        series.bufferDatasets[dataset] = matrix(all, series.buffers,
            [field = field](const CheckpointFigures& r, const std::string& c) { return r.buffers.at(c).*field; });
    series.bufferDatasets[rf::column::kNonfinite] = matrix(all, series.buffers,
        [](const CheckpointFigures& r, const std::string& c) { return double(r.buffers.at(c).nonfinite); });
}

} // namespace nanscope::checkpointtables
