#include "app/window/ScreenshotController.h"

#include <QTimer>
#include <QWidget>

namespace nanscope {

ScreenshotController::ScreenshotController(QWidget* window)
    : QObject(window)
    , m_window(window)
{
}

void ScreenshotController::request(const QString& path)
{
    m_path = path;
    m_outstanding = {int(Work::Run)};
}

void ScreenshotController::expect(Work work)
{
    if (requested())
        m_outstanding.insert(int(work));
}

void ScreenshotController::arrived(Work work)
{
    if (!requested())
        return;
    m_outstanding.remove(int(work));
    shootWhenReady();
}

void ScreenshotController::runFailed()
{
    if (!requested())
        return;
    m_outstanding.clear();
    shootWhenReady();
}

void ScreenshotController::shootWhenReady()
{
    if (!m_outstanding.isEmpty() || m_path.isEmpty())
        return;
    const QString path = m_path;
    m_path.clear();
    // Let queued replots run before grabbing the window.
    QTimer::singleShot(100, this, [this, path] { emit done(m_window->grab().save(path)); });
}

} // namespace nanscope
