#pragma once

#include <functional>
#include <string>

namespace nanscope {

// Long work in core is a synchronous function that reports here. `fraction` is in [0, 1].
// Returning false asks the work to stop as soon as it can; it then returns a "cancelled" error.
using ProgressCallback = std::function<bool(double fraction, const std::string& what)>;

inline bool reportProgress(const ProgressCallback& progress, double fraction, const std::string& what)
{
    return !progress || progress(fraction, what);
}

} // namespace nanscope
