#include "core/scan/Onset.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

namespace nanscope::scan {

namespace {

// Trailing running mean over the 2h + 1 rows up to and including each row: it sees a rise made
// of growing spikes that the median still ignores, and, looking only back, it cannot see a jump
// before it happens. A non-finite row makes the windows that hold it "worse than anything".
std::vector<double> trailingMean(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    std::vector<double> out;
    out.reserve(end - begin);
    const size_t width = size_t(2 * h + 1);
    for (size_t i = begin; i < end; ++i) {
        const size_t lo = i + 1 >= begin + width ? i + 1 - width : begin;
        double sum = 0;
        bool nonfinite = false;
        for (size_t j = lo; j <= i; ++j) {
            nonfinite = nonfinite || !s.finite[j];
            sum += s.finite[j] ? s.log[j] : 0.0;
        }
        out.push_back(nonfinite ? kNonfiniteLog : sum / double(i + 1 - lo));
    }
    return out;
}

} // namespace

namespace {

// Up to this half-width the window is one sorted vector (SortedWindow); above it, two trees.
constexpr int64_t kSortedWindowMaxHalfWidth = 128;

std::vector<double> smoothedBySortedWindow(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    std::vector<double> out;
    out.reserve(end - begin);
    SortedWindow window;
    size_t windowLo = begin, windowHi = begin; // rows [windowLo, windowHi) are in the window
    for (size_t i = begin; i < end; ++i) {
        const size_t lo = i >= begin + size_t(h) ? i - size_t(h) : begin;
        const size_t hi = std::min(s.size(), i + size_t(h) + 1);
        for (; windowHi < hi; ++windowHi)
            window.add(s.at(windowHi));
        for (; windowLo < lo; ++windowLo)
            window.remove(s.at(windowLo));
        out.push_back(window.median());
    }
    return out;
}

} // namespace

std::vector<double> smoothed(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    // The window's lower half below the median and its upper half from it, kept as the window
    // slides (both ends only move forward): O(log h) a row. Sorting each window afresh was
    // O(h) a row, and the divergence rule's window is a twentieth of the log: minutes on a
    // 100,000-step run of many ranks. The median is medianInPlace's, to the bit. A narrow
    // window (the onsets' few rows) is one sorted vector instead: a tree node per value, allocated
    // and freed as the window slides, was a third of the blow-up rule on bench_scan's run.
    std::vector<double> out;
    if (end <= begin)
        return out;
    if (h <= kSortedWindowMaxHalfWidth)
        return smoothedBySortedWindow(s, begin, end, h);
    out.reserve(end - begin);
    std::multiset<double> lower, upper;
    auto balance = [&] {
        const size_t wanted = (lower.size() + upper.size()) / 2;
        while (lower.size() > wanted) {
            upper.insert(*std::prev(lower.end()));
            lower.erase(std::prev(lower.end()));
        }
        while (lower.size() < wanted) {
            lower.insert(*upper.begin());
            upper.erase(upper.begin());
        }
    };
    auto add = [&](double v) {
        if (!lower.empty() && v <= *std::prev(lower.end()))
            lower.insert(v);
        else
            upper.insert(v);
    };
    auto remove = [&](double v) {
        if (!lower.empty() && v <= *std::prev(lower.end()))
            lower.erase(lower.find(v));
        else
            upper.erase(upper.find(v));
    };
    size_t windowLo = begin, windowHi = begin; // rows [windowLo, windowHi) are in the sets
    for (size_t i = begin; i < end; ++i) {
        const size_t lo = i >= begin + size_t(h) ? i - size_t(h) : begin;
        const size_t hi = std::min(s.size(), i + size_t(h) + 1);
        for (; windowHi < hi; ++windowHi)
            add(s.at(windowHi));
        for (; windowLo < lo; ++windowLo)
            remove(s.at(windowLo));
        balance();
        if (upper.empty()) {
            out.push_back(kNaN);
            continue;
        }
        const double m = *upper.begin();
        if ((lower.size() + upper.size()) % 2 != 0) {
            out.push_back(m);
            continue;
        }
        const double below = *std::prev(lower.end());
        out.push_back(middlePairMedian(below, m));
    }
    return out;
}

Rise findOnset(const LogSeries& s, size_t a, size_t f, const ScanConfig& config)
{
    Rise rise;
    rise.onsetRow = f;
    if (f <= a)
        return rise;
    const int64_t h = std::max<int64_t>(0, config.smoothingRows);
    const std::vector<double> m = smoothed(s, a, f, h);
    std::vector<double> finiteSmooth;
    for (double v : m)
        if (v < kNonfiniteLog)
            finiteSmooth.push_back(v);
    if (finiteSmooth.empty())
        return rise;
    const std::vector<double> mean = trailingMean(s, a, f, h);
    // At baseline: both the median and the mean of the window are within the noise band.
    auto walkBack = [&](double threshold) {
        for (size_t i = f; i-- > a;)
            if (m[i - a] <= threshold && mean[i - a] <= threshold)
                return i + 1;
        return a;
    };
    // First guess: a low quantile of the smoothed curve is baseline as long as the rise takes
    // less than three quarters of the window.
    const size_t quarter = finiteSmooth.size() / 4;
    std::nth_element(finiteSmooth.begin(), finiteSmooth.begin() + quarter, finiteSmooth.end());
    double baseline = finiteSmooth[quarter];
    double delta = config.minOnsetDecades;
    size_t onset = walkBack(baseline + delta);
    for (int iteration = 0; iteration < 4; ++iteration) {
        // The smoothed curve already sees the rise h rows early: keep those rows out. The baseline
        // is the level just before the onset (learning-rate schedules move it over a run); the
        // noise is the row-to-row scatter around the smoothed curve, scaled to the smoothed curve.
        const size_t referenceEnd = onset >= a + size_t(h) ? onset - size_t(h) : a;
        const size_t referenceBegin =
            referenceEnd >= a + size_t(config.baselineRows) ? referenceEnd - size_t(config.baselineRows) : a;
        std::vector<double> reference, residuals;
        for (size_t i = referenceBegin; i < referenceEnd; ++i)
            if (s.finite[i]) {
                reference.push_back(s.log[i]);
                if (m[i - a] < kNonfiniteLog)
                    residuals.push_back(std::fabs(s.log[i] - m[i - a]));
            }
        if (reference.size() < 5)
            break;
        baseline = medianOf(reference);
        const double rawNoise = noiseFromDeviationsInPlace(residuals);
        const double smoothNoise = rawNoise * 1.25 / std::sqrt(double(2 * h + 1));
        delta = std::max(config.noiseSigmas * smoothNoise, config.minOnsetDecades);
        const size_t next = walkBack(baseline + delta);
        if (next == onset)
            break;
        onset = next;
    }
    // At a step edge the centred median is the largest of the quiet values and can cross the
    // threshold a row or two early: the onset is the first row whose own value is above it too.
    const size_t limit = std::min(f, onset + size_t(h));
    while (onset < limit && s.finite[onset] && s.log[onset] <= baseline + delta)
        ++onset;
    rise.onsetRow = onset;
    rise.baseline = baseline;
    rise.delta = delta;
    return rise;
}

} // namespace nanscope::scan
