#include "AppTestSupport.h"

#include "app/MainWindow.h"
#include "widgets/SeriesPlot.h"

#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {
bool openAndWait(MainWindow& window, const QString& dir)
{
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(dir);
    return loaded.wait(30000) && loaded.first().first().toBool();
}
} // namespace

TEST(MainWindow, ShowsLossAndGradNormWithNonFiniteMarkers)
{
    MainWindow window;
    ASSERT_TRUE(openAndWait(window, test::demoRun("sudden-blowup")));
    EXPECT_TRUE(window.errorText().isEmpty());
    EXPECT_EQ(window.overview().runName, "sudden-blowup");
    EXPECT_GT(window.lossPlot()->nanCount() + window.lossPlot()->posInfCount(), 0)
        << "the NaN steps after the blow-up are drawn, not dropped";
    EXPECT_GT(window.gradNormPlot()->nanCount(), 0);
    EXPECT_TRUE(window.gradNormPlot()->logScale());
    EXPECT_TRUE(window.windowTitle().contains("sudden-blowup"));
}

TEST(MainWindow, BrokenRunShowsAnErrorPanelNamingTheFile)
{
    QTemporaryDir dir;
    MainWindow window;
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(dir.path());
    ASSERT_TRUE(loaded.wait(30000));
    EXPECT_FALSE(loaded.first().first().toBool());
    EXPECT_TRUE(window.errorText().contains("run.h5")) << window.errorText().toStdString();
    EXPECT_TRUE(window.errorText().contains("not found"));
}

TEST(MainWindow, ScreenshotRendersTheWindowOffscreen)
{
    QTemporaryDir dir;
    const QString png = dir.filePath("shot.png");
    const auto result = test::runNanscope({test::demoRun("gradual-blowup"), "--screenshot", png});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    QImage image(png);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1600, 1000));
    // A drawn plot is not a blank window: count distinct colours in a coarse sample.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7)
            colours.insert(image.pixel(x, y));
    EXPECT_GT(colours.size(), 8);
}
