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

namespace {

// The column's steady rise toward its end, when it has one.
std::optional<Precursor> columnPrecursor(const LayerColumn& column, const ScanConfig& config, double minDecades)
{
    const LogSeries& s = column.series;
    std::vector<size_t> finiteRows;
    double lowest = kInf, highest = -kInf;
    for (size_t r = 0; r < s.size(); ++r)
        if (s.finite[r]) {
            finiteRows.push_back(r);
            lowest = std::min(lowest, s.log[r]);
            highest = std::max(highest, s.log[r]);
        }
    if (finiteRows.size() < 8)
        return std::nullopt;
    // The rise below is a peak of these values over a baseline that is a median of them: never more
    // than their spread. Most columns of a thousand-layer run are flat; they stop here.
    if (!(highest - lowest >= minDecades))
        return std::nullopt;
    // A copy holding the finite rows only: the precursor is the growth before the failure.
    LogSeries finite;
    for (size_t r : finiteRows) {
        finite.steps.push_back(s.steps[r]);
        finite.log.push_back(s.log[r]);
        finite.finite.push_back(1);
        finite.raw.push_back(s.raw[r]);
    }
    const size_t n = finite.size();
    double peak = -kInf;
    for (size_t r = n >= 3 ? n - 3 : 0; r < n; ++r)
        peak = std::max(peak, finite.log[r]);
    ScanConfig onsetConfig = config;
    onsetConfig.smoothingRows = std::min<int64_t>(config.smoothingRows, 2);
    // The failure is right after the last finite row.
    const Rise rise = findOnset(finite, 0, n, onsetConfig);
    if (!std::isfinite(rise.baseline) || rise.onsetRow + 4 > n)
        return std::nullopt;
    const double riseDecades = peak - rise.baseline;
    if (!(riseDecades >= minDecades))
        return std::nullopt;
    const size_t middle = (rise.onsetRow + n) / 2;
    std::vector<double> aroundMiddle;
    for (size_t r = middle > 0 ? middle - 1 : 0; r <= middle + 1 && r < n; ++r)
        aroundMiddle.push_back(finite.log[r]);
    if (!(medianOf(aroundMiddle) - rise.baseline >= 0.25 * riseDecades))
        return std::nullopt;
    std::vector<double> x, y;
    for (size_t r = rise.onsetRow; r < n; ++r) {
        x.push_back(double(finite.steps[r]));
        y.push_back(finite.log[r]);
    }
    const double slope = theilSenSlope(x, y);
    if (!(slope > 0))
        return std::nullopt;
    // The noise band can be crossed by a slow drift long before the steady growth: the onset is
    // the knee of a flat-then-straight fit (log scale) at or after it, where the growth began.
    size_t knee = rise.onsetRow;
    {
        const size_t lo = rise.onsetRow > 20 ? rise.onsetRow - 20 : 0;
        double bestError = kInf;
        for (size_t k = rise.onsetRow; k + 4 <= n; ++k) {
            double level = 0;
            for (size_t r = lo; r < k; ++r)
                level += finite.log[r];
            level = k > lo ? level / double(k - lo) : finite.log[k];
            double error = 0, sxy = 0, sxx = 0;
            for (size_t r = lo; r < k; ++r)
                error += (finite.log[r] - level) * (finite.log[r] - level);
            for (size_t r = k; r < n; ++r) {
                const double dx = double(finite.steps[r] - finite.steps[k]);
                sxy += dx * (finite.log[r] - level);
                sxx += dx * dx;
            }
            const double b = sxx > 0 ? sxy / sxx : 0;
            for (size_t r = k; r < n; ++r) {
                const double e = finite.log[r] - level - b * double(finite.steps[r] - finite.steps[k]);
                error += e * e;
            }
            if (error < bestError) {
                bestError = error;
                knee = k;
            }
        }
    }
    Precursor p;
    p.name = column.name;
    p.source = column.source;
    p.onsetStep = finite.steps[knee];
    p.baseline = std::pow(10.0, rise.baseline);
    p.peak = std::pow(10.0, peak);
    p.riseDecades = riseDecades;
    p.decadesPerStep = slope;
    return p;
}

} // namespace

Result<std::optional<Precursor>> findPrecursor(const ScanInputs& inputs, const ScanConfig& config,
                                               int64_t windowBeginStep, int64_t failureStep, double minDecades)
{
    std::optional<Precursor> best;
    struct Source
    {
        const char* table;
        const char* value;
        const char* countA;
        const char* countB;
    };
    for (const Source& source : {Source{rf::kActivations, rf::column::kMax, rf::column::kNan, rf::column::kInf},
                                 Source{rf::kLayers, rf::column::kParamNorm, rf::column::kParamNonfinite, nullptr}}) {
        if (!inputs.hasDataset(source.table, source.value))
            continue;
        auto visited = inputs.visitWindow(source.table, source.value, source.countA, source.countB, windowBeginStep,
                                          failureStep - 1, 0, [&](const LayerColumn& column) {
                                              auto p = columnPrecursor(column, config, minDecades);
                                              if (p && (!best || p->onsetStep < best->onsetStep ||
                                                        (p->onsetStep == best->onsetStep && p->riseDecades > best->riseDecades)))
                                                  best = std::move(p);
                                          });
        if (!visited)
            return Error{visited.error()};
    }
    return best;
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
