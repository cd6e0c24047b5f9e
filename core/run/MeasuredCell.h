#pragma once

// A cell of a range table (/activations, /inputs: min, max, mean, std over the finite elements,
// nan and inf counting the others) that measured no element: a module that did not run at that
// logged step (an expert no token was routed to). Its figures are NaN and both counts 0; an output
// whose every element was non-finite has NaN figures too, but a count above 0. Readers show such a
// cell as no value, never as a NaN (docs/run-format.md). The one test the scan, the heatmap, the
// Layer view and the report use.

#include <algorithm>
#include <cmath>

namespace nanscope {

inline bool noElementMeasured(double figure, double nanCount, double infCount)
{
    return std::isnan(figure) && !(nanCount > 0) && !(infCount > 0);
}

// A range cell's largest |x|: what the scan measures a module's output by (a log-variance head
// falls below zero while its magnitude grows), and what the window and the report plot of it.
inline double largestMagnitude(double low, double high)
{
    return std::max(std::fabs(low), std::fabs(high));
}

} // namespace nanscope
