#include "widgets/HeatmapView.h"

#include <qcustomplot.h>

#include <cmath>

#include <gtest/gtest.h>

using namespace nanscope;

// The NaN colour used to be magenta, which the thermal scale also paints for mid values.
TEST(HeatmapView, NonfiniteColourIsNoColourOfTheValueScale)
{
    HeatmapView view;
    const QColor nan = view.nonfiniteColour();
    QCPColorGradient gradient = view.gradient(); // color() is not const in QCustomPlot
    double closest = 1e9;
    for (int i = 0; i <= 255; ++i) {
        const QColor c = QColor::fromRgb(gradient.color(i, QCPRange(0, 255)));
        const double d = std::hypot(std::hypot(c.red() - nan.red(), c.green() - nan.green()), c.blue() - nan.blue());
        closest = std::min(closest, d);
    }
    EXPECT_GT(closest, 120.0) << "a non-finite cell would read as a value";
}
