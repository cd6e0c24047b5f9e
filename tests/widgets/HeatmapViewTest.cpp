#include "widgets/HeatmapScale.h"
#include "widgets/HeatmapView.h"

#include <qcustomplot.h>

#include <QCoreApplication>
#include <QFontMetrics>
#include <QImage>
#include <QMouseEvent>
#include <QTest>

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

// Issue 27: on the thermal scale, a fully NaN bias (32 values) was near-black, the colour of a
// healthy cell, beside a weight's 1024 in white; a map where every cell had gone non-finite was
// blank white. Any count at all must read as red against a quiet background of none. (One row:
// a one-row map was not drawn at all.)
TEST(HeatmapView, EveryNonzeroCountReadsRedAgainstTheBackgroundOfNone)
{
    HeatmapView view;
    view.resize(800, 300);
    LayerHeatmap map;
    map.quantity = HeatmapQuantity::NonfiniteCount;
    map.rows = {"fc1.bias"};
    map.binFirstStep = {0, 10, 20, 30};
    map.binLastStep = {9, 19, 29, 39};
    map.values = {0.f, 1.f, 32.f, 1024.f};
    map.nonfinite = {0, 0, 0, 0};
    view.setHeatmap(map);
    view.show();
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QImage image = view.plot()->toPixmap().toImage();
    auto cellColour = [&](int bin) {
        // The map spreads bins evenly over [first, last]: cell centres at these keys.
        const double key = 0 + (39.0 - 0.0) * bin / 3.0;
        const int x = int(view.plot()->xAxis->coordToPixel(key + (bin == 0 ? 3 : bin == 3 ? -3 : 0)));
        const int y = int(view.plot()->yAxis->coordToPixel(0));
        return image.pixelColor(x, y);
    };
    const QColor none = cellColour(0);
    EXPECT_GT(none.lightness(), 200) << "no non-finite value: a quiet background";
    for (int bin = 1; bin < 4; ++bin) {
        const QColor c = cellColour(bin);
        EXPECT_GT(c.red(), c.blue() + 60) << "count " << map.values[bin] << " reads red: " << c.name().toStdString();
        EXPECT_LT(c.lightness(), none.lightness() - 40) << "and stands out from none";
    }
    EXPECT_NE(cellColour(1), cellColour(3)) << "one value and a thousand differ";
}

// 64 ranks in the short Ranks dock drew 64 row labels over each other into a black bar. The rows
// are named as far as one text line each fits the plot's height, and again as the view grows.
TEST(HeatmapView, RowLabelsFitThePlotHeightAndFollowItsResize)
{
    HeatmapView view;
    LayerHeatmap map;
    map.quantity = HeatmapQuantity::GradNormLog10;
    const int rows = 64;
    for (int r = 0; r < rows; ++r)
        map.rows.push_back("rank " + std::to_string(r));
    map.binFirstStep = {0, 10};
    map.binLastStep = {9, 19};
    map.values.assign(size_t(rows) * 2, 0.5f);
    map.nonfinite.assign(size_t(rows) * 2, 0);
    const auto labelled = [&] {
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        auto ticker = view.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        return ticker ? int(ticker->ticks().size()) : -1;
    };
    const int line = QFontMetrics(view.plot()->yAxis->tickLabelFont()).height();

    view.resize(500, 220);
    view.show();
    view.setHeatmap(map);
    const int shortLabels = labelled();
    const int shortHeight = view.plot()->axisRect()->height();
    ASSERT_GT(shortHeight, 0);
    EXPECT_GE(shortLabels, 2) << "some rows are still named";
    EXPECT_LE(shortLabels * line, shortHeight + line) << shortLabels << " labels of " << line << " px in " << shortHeight
                                                      << " px overlap";

    view.resize(500, 1600);
    QCoreApplication::processEvents();
    const int tallLabels = labelled();
    labelled(); // the queued replot after the labels changed
    EXPECT_GT(tallLabels, shortLabels) << "a taller plot names more rows";
    if (view.plot()->axisRect()->height() >= rows * line)
        EXPECT_EQ(labelled(), rows) << "every row, where every label fits";
}

// Issue 51, item 9: the final spike took the whole colour scale, so a gradual and a sudden blow-up
// looked alike. A layer that grows from 0 to 4 (log10) over 100 bins and ends in a spike of 30:
// over the whole range the build-up is the bottom sixth of the colours; clipped at the 99th
// percentile it spans most of them, and per layer each layer's own growth does.
TEST(HeatmapView, TheDefaultScaleShowsTheBuildUpBeforeTheSpike)
{
    const size_t bins = 200;
    std::vector<float> values;
    for (size_t row = 0; row < 2; ++row)
        for (size_t b = 0; b < bins; ++b)
            values.push_back(row == 0 ? (b + 1 == bins ? 30.0f : float(4.0 * double(b) / double(bins)))
                                      : float(-2.0 + 0.001 * double(b)));
    const ScaledHeatmap whole = scaleHeatmap(values, 2, bins, HeatmapScale::WholeRange);
    EXPECT_DOUBLE_EQ(whole.upper, 30.0);
    const ScaledHeatmap clipped = scaleHeatmap(values, 2, bins, HeatmapScale::Percentile99);
    EXPECT_LT(clipped.upper, 5.0) << "the spike does not set the top colour";
    const double buildUpShareWhole = 4.0 / (whole.upper - whole.lower);
    const double buildUpShareClipped = 4.0 / (clipped.upper - clipped.lower);
    EXPECT_LT(buildUpShareWhole, 0.15);
    EXPECT_GT(buildUpShareClipped, 0.6);
    const ScaledHeatmap perLayer = scaleHeatmap(values, 2, bins, HeatmapScale::PerLayer);
    EXPECT_DOUBLE_EQ(perLayer.values[bins + bins - 1], 1.0) << "the flat layer's own growth spans its colours";
    EXPECT_DOUBLE_EQ(perLayer.values[bins], 0.0);

    HeatmapView view;
    view.resize(640, 400);
    EXPECT_EQ(view.scale(), HeatmapScale::Percentile99) << "the default shows the build-up";
    LayerHeatmap map;
    map.quantity = HeatmapQuantity::GradNormLog10;
    map.rows = {"fc1.weight", "fc2.weight"};
    map.values = values;
    for (size_t b = 0; b < bins; ++b) {
        map.binFirstStep.push_back(int64_t(b));
        map.binLastStep.push_back(int64_t(b));
    }
    view.setHeatmap(map);
    EXPECT_LT(view.colourRange().upper, 5.0);
    view.setScale(HeatmapScale::WholeRange);
    EXPECT_DOUBLE_EQ(view.colourRange().upper, 30.0);
    view.setScale(HeatmapScale::PerLayer);
    EXPECT_DOUBLE_EQ(view.colourRange().upper, 1.0);

    // The onsets are marked; a mark outside the data is not drawn.
    view.setOnsets({{120, "blowup (gradual)"}, {5000, "spike"}});
    EXPECT_EQ(view.onsetMarkCount(), 1);
    view.clear();
    EXPECT_EQ(view.onsetMarkCount(), 0);
}

// Issue 51, item 7: in the Ranks dock the colour bar's title was cut to "og10 grad norm", and the
// readout kept naming the quantity shown before a switch.
TEST(HeatmapView, AShortBarDropsItsTitleAndANewQuantityClearsTheReadout)
{
    HeatmapView view;
    LayerHeatmap map;
    map.quantity = HeatmapQuantity::GradNormLog10;
    map.rows = {"rank 0", "rank 1"};
    map.values = {0.1f, 0.2f, 0.3f, 0.4f};
    map.binFirstStep = {0, 10};
    map.binLastStep = {9, 19};
    view.resize(640, 400);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.setHeatmap(map);
    const auto settle = [&] {
        QCoreApplication::processEvents();
        view.plot()->replot();
        view.plot()->replot();
    };
    settle();
    EXPECT_FALSE(view.scaleTitle().isEmpty()) << "a tall bar holds its title";
    view.resize(640, 110); // the Ranks dock at its least
    settle();
    EXPECT_TRUE(view.scaleTitle().isEmpty()) << "cut: '" << view.scaleTitle().toStdString() << "'";
    view.resize(640, 400);
    settle();
    EXPECT_FALSE(view.scaleTitle().isEmpty()) << "and back when there is room";

    const QPointF centre = view.plot()->axisRect()->rect().center();
    QMouseEvent move(QEvent::MouseMove, centre, view.plot()->mapToGlobal(centre), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view.plot(), &move);
    ASSERT_FALSE(view.readoutText().isEmpty()) << "hovering a cell names it";
    map.quantity = HeatmapQuantity::ParamNormLog10;
    view.setHeatmap(map);
    EXPECT_TRUE(view.readoutText().isEmpty()) << "the old quantity's value is not shown under the new one";
}
