#include "core/scan/Signatures.h"

#include "core/run/RunFormat.h"
#include "core/scan/Onset.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

std::vector<uint8_t> spikeRows(const LogSeries& s, int64_t windowSteps, double sigmas)
{
    std::vector<uint8_t> out(s.size(), 0);
    // Refreshing the median and deviation every few rows instead of every row changes them by
    // a few rows' worth of a 1,000-step window: nothing, at a sixteenth of the cost.
    constexpr size_t kRefreshRows = 16;
    // A series that is exactly constant has no spread; a floor keeps rounding noise from counting.
    constexpr double kMinDeviation = 0.01;
    double median = kNaN, deviation = kNaN;
    size_t windowBegin = 0;
    SortedWindow window; // the finite rows of [removedUpTo, addedUpTo)
    size_t addedUpTo = 0, removedUpTo = 0;
    for (size_t r = 0; r < s.size(); ++r) {
        while (windowBegin < r && s.steps[windowBegin] < s.steps[r] - windowSteps)
            ++windowBegin;
        if (r % kRefreshRows == 0 || !std::isfinite(median)) {
            // The window becomes the finite rows of [windowBegin, r).
            for (; removedUpTo < windowBegin; ++removedUpTo)
                if (removedUpTo < addedUpTo && s.finite[removedUpTo])
                    window.remove(s.log[removedUpTo]);
            for (addedUpTo = std::max(addedUpTo, windowBegin); addedUpTo < r; ++addedUpTo)
                if (s.finite[addedUpTo])
                    window.add(s.log[addedUpTo]);
            if (window.size() >= 10) {
                median = window.median();
                deviation = std::max(kMinDeviation, window.noiseAround(median));
            } else {
                median = deviation = kNaN;
            }
        }
        if (s.finite[r] && std::isfinite(median) && s.log[r] > median + sigmas * deviation)
            out[r] = 1;
    }
    return out;
}

std::optional<double> spikeShare(const LogSeries& s, const std::vector<uint8_t>& spikes, size_t endRow)
{
    size_t finite = 0, spiking = 0;
    for (size_t r = 0; r < endRow && r < s.size(); ++r)
        if (s.finite[r]) {
            ++finite;
            spiking += spikes[r];
        }
    if (finite == 0)
        return std::nullopt;
    return double(spiking) / double(finite);
}

Result<std::optional<std::vector<std::string>>> nonfiniteParametersAt(const ScanInputs& inputs, int64_t step)
{
    if (!inputs.hasDataset(rf::kLayers, rf::column::kParamNorm))
        return std::optional<std::vector<std::string>>{};
    const auto& steps = inputs.steps(rf::kLayers);
    const size_t row = rowAtOrAfter(steps, step);
    const TableInfo* table = inputs.table(rf::kLayers);
    if (row >= steps.size() || steps[row] != step || int64_t(row) >= table->rows)
        return std::optional<std::vector<std::string>>{};
    auto norms = inputs.readBlock(rf::kLayers, rf::column::kParamNorm, int64_t(row), 1);
    if (!norms)
        return Error{norms.error()};
    std::vector<float> counts;
    if (inputs.hasDataset(rf::kLayers, rf::column::kParamNonfinite)) {
        auto read = inputs.readBlock(rf::kLayers, rf::column::kParamNonfinite, int64_t(row), 1);
        if (!read)
            return Error{read.error()};
        counts = std::move(*read);
    }
    std::vector<std::string> bad;
    for (size_t c = 0; c < table->names.size() && c < norms->size(); ++c)
        if (!std::isfinite((*norms)[c]) || (c < counts.size() && counts[c] > 0))
            bad.push_back(table->names[c]);
    return std::optional<std::vector<std::string>>{std::move(bad)};
}

double headroomDecades(double peak, double limit)
{
    if (!std::isfinite(peak))
        return 0.0;
    return std::log10(limit) - log10Abs(peak);
}

} // namespace nanscope::scan
