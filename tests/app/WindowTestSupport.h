#pragma once

#include "app/window/MainWindow.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>

#include <gtest/gtest.h>

namespace nanscope::test {

// Opens a run in the window and waits for it; success when it loaded, else a failure that says
// why (the window's error panel, or that nothing came back), so an intermittent failure is legible.
inline ::testing::AssertionResult openAndWait(MainWindow& window, const QString& dir)
{
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(dir);
    if (!loaded.wait(30000))
        return ::testing::AssertionFailure() << dir.toStdString() << ": the window did not load it within 30 s";
    if (!loaded.first().first().toBool())
        return ::testing::AssertionFailure() << dir.toStdString() << ": " << window.errorText().toStdString();
    return ::testing::AssertionSuccess();
}

// Waits until the open run's scan has arrived. (A spy made after the open can miss the signal:
// the scan may land in the same event batch as the run.)
inline bool waitForScan(MainWindow& window, int timeoutMs = 30000)
{
    QElapsedTimer clock;
    clock.start();
    while (!window.context()->scanned() && clock.elapsed() < timeoutMs)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return window.context()->scanned();
}

} // namespace nanscope::test
