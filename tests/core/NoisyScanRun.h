#pragma once

// An in-memory run for the scan's rules: a loss shaped by `lossAt` and a gradient norm around 1,
// each with log-normal noise from `seed`, and tables of any shape over the same steps. The tests
// then bend it (a NaN from some row on, a module's output that climbs) and scan it.

#include "core/scan/ScanInputs.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace nanscope::test {

struct NoisyScanRun
{
    // `lossNoiseDecades`, `gradNoiseDecades`: the standard deviation of each value's log10 noise.
    NoisyScanRun(int64_t count, const std::function<double(int64_t)>& lossAt, double lossNoiseDecades,
                 double gradNoiseDecades, uint32_t seed)
    {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 1.0);
        for (int64_t step = 0; step < count; ++step) {
            steps.push_back(step);
            loss.push_back(lossAt(step) * std::pow(10.0, lossNoiseDecades * noise(rng)));
            gradNorm.push_back(std::pow(10.0, gradNoiseDecades * noise(rng)));
        }
    }
    scan::ScanInputs inputs() const { return scan::ScanInputs::fromMemory(steps, {{"loss", loss}, {"grad_norm", gradNorm}}); }
    // A [steps x columns] table, row-major, of `value(step, column)`.
    std::vector<float> table(size_t columns, const std::function<float(int64_t, size_t)>& value) const
    {
        std::vector<float> out;
        for (int64_t step : steps)
            for (size_t c = 0; c < columns; ++c)
                out.push_back(value(step, c));
        return out;
    }
    std::vector<int64_t> steps;
    std::vector<double> loss, gradNorm;
};

} // namespace nanscope::test
