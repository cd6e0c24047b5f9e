#include "widgets/BatchNormView.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <QFile>
#include <QImage>
#include <QTemporaryDir>

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace nanscope;

TEST(SeriesPlot, NonFiniteValuesGetMarkersInsteadOfVanishing)
{
    SeriesPlot plot("loss");
    const double inf = std::numeric_limits<double>::infinity();
    plot.setSeries({0, 1, 2, 3, 4, 5}, {1.0, std::nan(""), 2.0, inf, -inf, std::nan("")});
    EXPECT_EQ(plot.nanCount(), 2);
    EXPECT_EQ(plot.posInfCount(), 1);
    EXPECT_EQ(plot.negInfCount(), 1);
    // A log axis drops zeros from the line, but NaN stays marked.
    plot.setLogScale(true);
    EXPECT_EQ(plot.nanCount(), 2);
}

// A loss below zero (Keras' history.json of tests/data/logs, a negative log-likelihood) on the
// log axis the loss plot starts with would be an empty plot.
TEST(SeriesPlot, ASeriesBelowZeroIsDrawnOnALinearAxis)
{
    SeriesPlot plot("loss");
    plot.setLogScale(true);
    plot.setSeries({0, 1, 2}, {0.5, 0.25, 0.125});
    EXPECT_TRUE(plot.logScale());
    plot.setSeries({0, 1, 2, 3}, {-3863464.0, -3942532.75, -3938984.25, std::nan("")});
    EXPECT_FALSE(plot.logScale());
    EXPECT_EQ(plot.plot()->yAxis->scaleType(), QCPAxis::stLinear);
}

TEST(SeriesPlot, ConstantSeriesGetsAReadableBandAroundItsValue)
{
    SeriesPlot plot("learning rate");
    plot.setSeries({0, 1, 2, 3}, {0.05, 0.05, 0.05, 0.05});
    const QCPRange range = plot.plot()->yAxis->range();
    EXPECT_LE(range.lower, 0.046) << "a constant learning rate is not drawn in a sliver of 1e-12";
    EXPECT_GE(range.upper, 0.054);
    EXPECT_GT(range.lower, 0.0);
}

TEST(SeriesPlot, ExportsPngSvgAndPdf)
{
    SeriesPlot plot("grad norm");
    plot.resize(600, 300);
    plot.setSeries({0, 1, 2}, {1, 2, 3});
    QTemporaryDir dir;
    for (const char* name : {"p.png", "p.svg", "p.pdf"}) {
        const QString path = dir.filePath(name);
        EXPECT_TRUE(plot.exportTo(path, 900, 400)) << name;
        EXPECT_GT(QFileInfo(path).size(), 500) << name;
    }
    // The PNG is the requested size and holds the series line, not just axes.
    const QImage png(dir.filePath("p.png"));
    ASSERT_FALSE(png.isNull());
    EXPECT_EQ(png.size(), QSize(900, 400));
    int lineColoured = 0;
    for (int y = 0; y < png.height(); ++y)
        for (int x = 0; x < png.width(); ++x)
        {
            const QColor c = png.pixelColor(x, y); // antialiased: near the series blue
            lineColoured += std::abs(c.red() - 37) < 60 && std::abs(c.green() - 99) < 60 && c.blue() > 180;
        }
    EXPECT_GT(lineColoured, 100) << "the exported plot has no line";
    QFile svg(dir.filePath("p.svg"));
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    const QByteArray svgText = svg.readAll();
    EXPECT_TRUE(svgText.contains("<svg")) << "not an SVG document";
    EXPECT_TRUE(svgText.contains("#2563eb")) << "the series line is missing from the SVG";
    QFile pdf(dir.filePath("p.pdf"));
    ASSERT_TRUE(pdf.open(QIODevice::ReadOnly));
    EXPECT_TRUE(pdf.read(5).startsWith("%PDF-"));
}

TEST(OverviewView, ZoomOnOnePlotMovesEveryPlot)
{
    OverviewView view;
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (int i = 0; i < 1000; ++i) {
        steps.push_back(i);
        values.push_back(1.0 + i);
    }
    view.setScalars(steps, {{"loss", values}, {"grad_norm", values}, {"lr", values}}, {10, 20});
    EXPECT_FALSE(view.plot("loss_scale")->isVisibleTo(&view)) << "a scalar the run lacks has no plot";
    EXPECT_EQ(view.plot("loss")->markedCount(), 2) << "skipped steps are marked";
    view.plot("grad_norm")->plot()->xAxis->setRange(100, 200);
    for (const char* scalar : {"loss", "lr"}) {
        const QCPRange range = view.plot(scalar)->plot()->xAxis->range();
        EXPECT_DOUBLE_EQ(range.lower, 100) << scalar;
        EXPECT_DOUBLE_EQ(range.upper, 200) << scalar;
    }
}

TEST(BatchNormView, SummaryNamesTheStepWhereStatisticsWentNonFinite)
{
    BatchNormView view;
    BatchNormSeries healthy{"features.1", {0, 1, 2}, {0, 0, 0}, {1, 1, 1}, {0.5, 0.5, 0.5}, {2, 2, 2}, {0, 0, 0}};
    BatchNormSeries poisoned{"features.4", {0, 1, 2}, {0, NAN, NAN}, {1, NAN, NAN}, {0.5, NAN, NAN}, {2, NAN, NAN}, {0, 64, 64}};
    view.setSeries({healthy, poisoned});
    // The scan judges the layers (the window passes judgeLayerHealth of their names).
    view.setHealth({LayerHealth::Ok, LayerHealth::Bad});
    EXPECT_TRUE(view.summary().contains("features.4")) << "opens on the poisoned layer";
    EXPECT_TRUE(view.summary().contains("from step 1")) << view.summary().toStdString();
    EXPECT_EQ(view.varPlot()->nanCount(), 2);
    view.showLayer(0);
}

TEST(BatchNormView, CollapsedVarianceIsFlagged)
{
    BatchNormView view;
    BatchNormSeries collapsed{"bn", {0, 1, 2}, {0, 0, 0}, {1, 1, 1}, {0.5, 1e-12, 0.0}, {2, 2, 2}, {0, 0, 0}};
    view.setSeries({collapsed});
    EXPECT_TRUE(view.summary().contains("collapsed")) << view.summary().toStdString();
    EXPECT_EQ(view.varPlot()->markedCount(), 2);
}

TEST(SeriesPlot, TogglingLogKeepsTheUsersStepRange)
{
    SeriesPlot plot("grad norm");
    plot.setSeries({0, 100, 200, 300, 400}, {1, 2, 3, 4, 5});
    plot.setStepRange(100, 200);
    plot.setLogScale(true);
    EXPECT_DOUBLE_EQ(plot.plot()->xAxis->range().lower, 100) << "log toggling zoomed the step axis out";
    EXPECT_DOUBLE_EQ(plot.plot()->xAxis->range().upper, 200);
}

TEST(SeriesPlot, ResetZoomOnOnePlotMovesTheLinkedPlots)
{
    OverviewView overview;
    overview.setScalars({0, 10, 20, 30}, {{"loss", {1, 2, 3, 4}}, {"grad_norm", {1, 2, 3, 4}}}, {});
    SeriesPlot* loss = overview.plot("loss");
    SeriesPlot* grad = overview.plot("grad_norm");
    ASSERT_TRUE(loss && grad);
    loss->plot()->xAxis->setRange(10, 20); // a user zoom, linked
    EXPECT_DOUBLE_EQ(grad->plot()->xAxis->range().lower, 10);
    loss->resetZoom();
    EXPECT_DOUBLE_EQ(loss->plot()->xAxis->range().lower, 0);
    EXPECT_DOUBLE_EQ(grad->plot()->xAxis->range().lower, 0) << "reset zoom broke the linked step axis";
    EXPECT_DOUBLE_EQ(grad->plot()->xAxis->range().upper, loss->plot()->xAxis->range().upper);
}

TEST(SeriesPlot, StackedPlotsShareOneLeftEdgeWhateverTheirTickLabels)
{
    OverviewView overview;
    overview.resize(800, 900);
    overview.setScalars({0, 1, 2}, {{"loss", {1e-30, 1e30, 1}}, {"grad_norm", {0.05, 0.05, 0.05}}}, {});
    overview.show();
    SeriesPlot* loss = overview.plot("loss");
    SeriesPlot* grad = overview.plot("grad_norm");
    loss->plot()->replot();
    grad->plot()->replot();
    EXPECT_EQ(loss->plot()->axisRect()->left(), grad->plot()->axisRect()->left());
}

TEST(SeriesPlot, ClearDropsEverythingOfTheRun)
{
    SeriesPlot plot("loss");
    plot.setSeries({0, 1, 2}, {1.0, std::nan(""), 3.0});
    plot.setCheckpointSteps({1});
    plot.setSelectedStep(1);
    plot.addBand(0, 1, Qt::red, "blowup");
    plot.clear();
    EXPECT_EQ(plot.nanCount(), 0);
    EXPECT_EQ(plot.checkpointCount(), 0);
    EXPECT_TRUE(plot.plot()->graph(0)->data()->isEmpty());
    EXPECT_EQ(plot.plot()->itemCount(), 2) << "only the (hidden) step cursor and hover line remain";
}

TEST(SeriesPlot, ShortLogRangeHasNoRepeatedTickLabels)
{
    // Each of these drew a log axis whose labels repeated (3e+00 / 5e+00 / 8e+00 / 1e+01 / 1e+01 ...).
    for (const std::vector<double>& values : {std::vector<double>{3, 9}, {0.9, 1.1}, {2, 2.1}}) {
        SeriesPlot plot("loss");
        plot.resize(600, 300);
        plot.setSeries({0, 1}, values);
        plot.setLogScale(true);
        plot.show();
        plot.plot()->replot();
        const QVector<QString> labels = plot.plot()->yAxis->tickVectorLabels();
        QSet<QString> unique(labels.begin(), labels.end());
        EXPECT_EQ(unique.size(), labels.size()) << QStringList(labels.begin(), labels.end()).join(" / ").toStdString();
        EXPECT_GE(labels.size(), 2);
    }
}

TEST(SeriesPlot, IncidentLabelNearTheEndOfARunStaysInsideThePlot)
{
    SeriesPlot plot("grad norm");
    plot.resize(600, 300);
    std::vector<int64_t> steps;
    std::vector<double> values;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        values.push_back(1.0 + i);
    }
    plot.setSeries(steps, values);
    plot.addBand(97, 98, Qt::red, "sudden jump x3.6e+16 at the last steps");
    plot.addBand(10, 20, Qt::red, "gradual growth");
    plot.show();
    plot.plot()->replot();
    ASSERT_EQ(plot.bandLabels().size(), 2u);
    const int right = plot.plot()->axisRect()->right();
    for (QCPItemText* label : plot.bandLabels())
        EXPECT_LE(label->right->pixelPosition().x(), right + 1) << label->text().toStdString() << " is clipped";
    EXPECT_TRUE(plot.bandLabels()[1]->positionAlignment() & Qt::AlignLeft) << "a label with room reads rightwards";
}

TEST(SeriesPlot, IncidentLabelsAtOneStepStackWithoutOverlapAndKeepOffTheLegend)
{
    // Issue 27: "rank_nonfinite / sudden jump / sudden jump / bad_input" printed over each other,
    // and spike labels over the legend, on a plot of the Overview's height.
    SeriesPlot plot("loss");
    plot.resize(700, 200);
    plot.setSeries(std::vector<int64_t>{0, 100, 200}, {1, 101, 201});
    plot.setOverlay("eval loss", {0, 100, 200}, {1, 2, 3}); // a legend at the top left
    for (const char* label : {"rank_nonfinite", "sudden jump", "sudden jump", "bad_input"})
        plot.addBand(120, 121, Qt::red, label);
    for (int step : {0, 4, 8})
        plot.addBand(step, step + 1, QColor(217, 119, 6), "spike");
    plot.show();
    plot.plot()->replot(QCustomPlot::rpImmediateRefresh);

    auto rectOf = [](QCPItemText* label) {
        return QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized();
    };
    std::vector<QCPItemText*> shown;
    for (QCPItemText* label : plot.bandLabels())
        if (label->visible())
            shown.push_back(label);
    int sameStepShown = 0;
    for (QCPItemText* label : shown)
        sameStepShown += label->position->key() == 120;
    EXPECT_EQ(sameStepShown, 3) << "the three different labels at step 120, 'sudden jump' once";
    const QRectF legend = plot.plot()->legend->outerRect();
    for (size_t i = 0; i < shown.size(); ++i) {
        EXPECT_FALSE(rectOf(shown[i]).intersects(legend)) << shown[i]->text().toStdString() << " covers the legend";
        for (size_t j = i + 1; j < shown.size(); ++j)
            EXPECT_FALSE(rectOf(shown[i]).adjusted(1, 1, -1, -1).intersects(rectOf(shown[j])))
                << shown[i]->text().toStdString() << " over " << shown[j]->text().toStdString();
    }
}
