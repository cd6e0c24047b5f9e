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

// Every quantity the combo offers draws with its own scale title (a fourth quantity once read a
// title past the end of a three-entry table and crashed the window).
TEST(HeatmapView, EveryQuantityDrawsWithItsScaleTitle)
{
    for (HeatmapQuantity quantity : {HeatmapQuantity::GradNormLog10, HeatmapQuantity::ActivationAbsMax,
                                     HeatmapQuantity::NonfiniteCount, HeatmapQuantity::ParamNormLog10}) {
        HeatmapView view;
        view.resize(640, 400);
        LayerHeatmap map;
        map.quantity = quantity;
        map.rows = {"fc1.weight", "fc2.weight"};
        map.binFirstStep = {10, 20};
        map.binLastStep = {19, 29};
        map.values = {0.5f, 1.0f, 1.5f, 2.0f};
        map.nonfinite = {0, 0, 0, 0};
        view.setHeatmap(map);
        EXPECT_EQ(view.quantity(), quantity);
        EXPECT_FALSE(HeatmapView::scaleLabel(quantity).isEmpty());
        EXPECT_FALSE(view.grab().isNull());
    }
    EXPECT_EQ(HeatmapView::scaleLabel(HeatmapQuantity::ParamNormLog10), "log10 parameter norm");
}
