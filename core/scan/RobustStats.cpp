#include "core/scan/RobustStats.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

double medianInPlace(std::vector<double>& values)
{
    if (values.empty())
        return kNaN;
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    double m = values[mid];
    if (values.size() % 2 == 0) {
        const double below = *std::max_element(values.begin(), values.begin() + mid);
        m = middlePairMedian(below, m);
    }
    return m;
}

double noiseFromDeviationsInPlace(std::vector<double>& absoluteDeviations)
{
    return madToSigma(medianInPlace(absoluteDeviations));
}

double noiseAroundInPlace(std::vector<double>& values, double centre)
{
    for (double& v : values)
        v = std::fabs(v - centre);
    return noiseFromDeviationsInPlace(values);
}

double theilSenSlope(const std::vector<double>& x, const std::vector<double>& y)
{
    const size_t n = x.size();
    if (n < 2)
        return kNaN;
    const size_t stride = std::max<size_t>(1, n / 120);
    std::vector<double> slopes;
    for (size_t i = 0; i < n; i += stride)
        for (size_t j = i + stride; j < n; j += stride)
            if (x[j] != x[i])
                slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    return medianInPlace(slopes);
}

double log10Abs(double v)
{
    const double a = std::fabs(v);
    return a > 0 ? std::log10(a) : kZeroLog;
}

void fillLogs(LogSeries& s)
{
    const size_t n = s.raw.size();
    s.log.resize(n);
    s.finite.resize(n);
    for (size_t i = 0; i < n; ++i) {
        s.finite[i] = std::isfinite(s.raw[i]);
        s.log[i] = s.finite[i] ? log10Abs(s.raw[i]) : kNaN;
    }
}

LogSeries makeLogSeries(const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    LogSeries s;
    const size_t n = std::min(steps.size(), values.size());
    s.steps.assign(steps.begin(), steps.begin() + n);
    s.raw.assign(values.begin(), values.begin() + n);
    fillLogs(s);
    return s;
}


size_t rowAtOrAfter(const std::vector<int64_t>& steps, int64_t step)
{
    return size_t(std::lower_bound(steps.begin(), steps.end(), step) - steps.begin());
}

size_t rowAfter(const std::vector<int64_t>& steps, int64_t step)
{
    return size_t(std::upper_bound(steps.begin(), steps.end(), step) - steps.begin());
}

} // namespace nanscope::scan
