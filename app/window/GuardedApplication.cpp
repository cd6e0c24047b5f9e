#include "app/window/GuardedApplication.h"

#include <QMetaObject>
#include <QTextStream>
#include <QThread>

#include <exception>
#include <new>

namespace nanscope {

GuardedApplication::GuardedApplication(int& argc, char** argv)
    : QApplication(argc, argv)
{
}

bool GuardedApplication::notify(QObject* receiver, QEvent* event)
{
    try {
        return QApplication::notify(receiver, event);
    } catch (const std::bad_alloc&) {
        report(tr("out of memory while handling an event; the action was abandoned"));
    } catch (const std::exception& e) {
        report(tr("an error was caught and the action abandoned: %1").arg(QString::fromLocal8Bit(e.what())));
    } catch (...) {
        report(tr("an unknown error was caught and the action abandoned"));
    }
    return false;
}

void GuardedApplication::report(const QString& what)
{
    QTextStream(stderr) << "nanscope: " << what << Qt::endl;
    if (!m_handler)
        return;
    if (QThread::currentThread() == thread())
        m_handler(what);
    else // from the session thread: the handler touches widgets
        QMetaObject::invokeMethod(this, [this, what] { m_handler(what); }, Qt::QueuedConnection);
}

} // namespace nanscope
