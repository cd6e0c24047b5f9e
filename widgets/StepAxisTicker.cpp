#include "StepAxisTicker.h"

#include <cmath>

namespace nanscope {

StepAxisTicker::StepAxisTicker(std::shared_ptr<const StepAxis> axis)
    : m_axis(std::move(axis))
{
}

double StepAxisTicker::tickSpacing(StepAxisKind kind, double span, int targetCount)
{
    const double wanted = span / std::max(targetCount, 1);
    if (!(wanted > 0))
        return 1;
    if (kind == StepAxisKind::WallTime) {
        // Sub-second steps first: a short run (a demo, a smoke test) spans less than a second.
        static const double clock[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                                       21600, 43200, 86400, 172800, 604800};
        for (double seconds : clock)
            if (seconds >= wanted)
                return seconds;
        return std::ceil(wanted / 604800) * 604800; // weeks
    }
    const double decade = std::pow(10.0, std::floor(std::log10(wanted)));
    for (double mantissa : {1.0, 2.0, 5.0, 10.0})
        if (mantissa * decade >= wanted)
            return mantissa * decade;
    return 10 * decade;
}

void StepAxisTicker::generate(const QCPRange& range, const QLocale&, QChar, int, QVector<double>& ticks,
                              QVector<double>* subTicks, QVector<QString>* tickLabels)
{
    ticks.clear();
    if (subTicks)
        subTicks->clear();
    if (tickLabels)
        tickLabels->clear();
    const double lowerStep = std::max(range.lower, m_axis->firstStep());
    const double upperStep = std::min(range.upper, m_axis->lastStep());
    if (!(upperStep > lowerStep))
        return;
    // Wall time reads as time since the run's first row, so ticks fall on round elapsed times.
    const double origin = m_axis->kind() == StepAxisKind::WallTime ? m_axis->firstValue() : 0.0;
    const double lower = m_axis->valueAt(lowerStep) - origin;
    const double upper = m_axis->valueAt(upperStep) - origin;
    // A tick closer than this to the one before it would overprint its label.
    const double minimumGap = (range.upper - range.lower) / (2.5 * std::max(tickCount(), 1));
    // A pause packs much of the time into a few steps and its ticks are thinned away; finer
    // spacings then label the steps around it, until enough ticks are left.
    const int enough = std::max(3, tickCount() - 1);
    for (int refinement = 0; refinement <= 4; ++refinement) {
        ticks.clear();
        if (tickLabels)
            tickLabels->clear();
        const double spacing = tickSpacing(m_axis->kind(), upper - lower, tickCount() << refinement);
        const double first = std::ceil(lower / spacing);
        for (int k = 0; first + k <= upper / spacing + 1e-9 && k < 1000; ++k) {
            const double value = (first + k) * spacing; // a multiple, not a running sum: no drift
            const double step = m_axis->stepAt(value + origin);
            if (!ticks.isEmpty() && step - ticks.back() < minimumGap)
                continue;
            ticks.append(step);
            if (tickLabels)
                tickLabels->append(QString::fromStdString(m_axis->format(value + origin)));
        }
        if (ticks.size() >= enough)
            break;
    }
}

} // namespace nanscope
