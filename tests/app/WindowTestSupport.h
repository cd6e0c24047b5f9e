#pragma once

#include "app/MainWindow.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSignalSpy>

namespace nanscope::test {

// Opens a run in the window and waits for it; true when it loaded.
inline bool openAndWait(MainWindow& window, const QString& dir)
{
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(dir);
    return loaded.wait(30000) && loaded.first().first().toBool();
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
