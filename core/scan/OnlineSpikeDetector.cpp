#include "core/scan/OnlineSpikeDetector.h"

#include "core/scan/RobustStats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nanscope {

// The scan's median (an even count averages the two middle values, as numpy's does, which the
// Python recorder uses): the history holds finite values only.
using scan::medianOf;

OnlineSpikeDetector::OnlineSpikeDetector(double mads, size_t window, size_t leastHistory)
    : m_mads(mads)
    , m_window(std::max<size_t>(window, 1))
    , m_leastHistory(leastHistory)
{
}

bool OnlineSpikeDetector::isSpike(double value)
{
    if (!std::isfinite(value))
        return false;
    bool spike = false;
    if (m_values.size() >= m_leastHistory && !m_values.empty()) {
        const double median = medianOf({m_values.begin(), m_values.end()});
        std::vector<double> deviations;
        deviations.reserve(m_values.size());
        for (double v : m_values)
            deviations.push_back(std::abs(v - median));
        const double scale = std::max({medianOf(std::move(deviations)), 1e-3 * std::abs(median), 1e-12});
        spike = value > median + m_mads * scale;
    }
    if (!spike) {
        m_values.push_back(value);
        if (m_values.size() > m_window)
            m_values.pop_front();
    }
    return spike;
}

} // namespace nanscope
