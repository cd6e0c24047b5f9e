#pragma once

// How the moments of two parts of a tensor combine (Chan, Golub and LeVeque's pairwise update):
// the one formula every merge of statistics uses: the statistics pass's blocks and threads
// (TensorStats.cpp), the C++ Guard's module called more than once in a step (GuardReadback), and,
// in Python, nanscope_recorder.host_stats.merge_range_stats. tests/data/moment_merge_cases.json holds the
// cases both languages are checked against.

#include <cstdint>

namespace nanscope {

struct MomentSums {
    int64_t count = 0; // finite elements
    double mean = 0;
    double m2 = 0;     // sum of squared deviations from the mean
};

inline MomentSums combineMoments(const MomentSums& a, const MomentSums& b)
{
    if (b.count == 0)
        return a;
    if (a.count == 0)
        return b;
    const double total = double(a.count + b.count);
    const double delta = b.mean - a.mean;
    MomentSums sum;
    sum.count = a.count + b.count;
    sum.mean = a.mean + delta * (double(b.count) / total);
    sum.m2 = a.m2 + (b.m2 + delta * delta * (double(a.count) * double(b.count) / total));
    return sum;
}

} // namespace nanscope
