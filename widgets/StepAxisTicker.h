#pragma once

#include "core/run/StepAxis.h"

#include <qcustomplot.h>

#include <memory>

namespace nanscope {

// Ticks on a step axis at round values of another quantity (every 10 minutes of wall time, every
// epoch): the plot keeps its step coordinates, the ticks sit at the steps where the quantity
// reaches those values and read in it. Ticks that would crowd each other (many minutes of a pause
// within one step) are thinned, so labels never overlap.
class StepAxisTicker : public QCPAxisTicker
{
public:
    explicit StepAxisTicker(std::shared_ptr<const StepAxis> axis);

    void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision,
                  QVector<double>& ticks, QVector<double>* subTicks, QVector<QString>* tickLabels) override;

    // The round spacing of ticks in the axis's unit for a span of `span` units and about
    // `targetCount` ticks: 1-2-5 decades for epochs, clock-like steps (1 ms ... 1 s ... 1 min ... 1 h ...
    // 1 d) for wall time.
    static double tickSpacing(StepAxisKind kind, double span, int targetCount);

private:
    std::shared_ptr<const StepAxis> m_axis;
};

} // namespace nanscope
