#pragma once

#include "app/MainWindow.h"

#include <QSignalSpy>

namespace nanscope::test {

// Opens a run in the window and waits for it; true when it loaded.
inline bool openAndWait(MainWindow& window, const QString& dir)
{
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    window.openRun(dir);
    return loaded.wait(30000) && loaded.first().first().toBool();
}

} // namespace nanscope::test
