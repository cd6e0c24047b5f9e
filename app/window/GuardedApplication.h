#pragma once

#include <QApplication>

#include <functional>

namespace nanscope {

// The window's application object. An exception thrown from an event handler or a queued slot
// (on any thread) would otherwise end the program with no message; here it is reported to
// stderr and to the handler (the window's status bar) and the event is dropped.
class GuardedApplication : public QApplication
{
public:
    GuardedApplication(int& argc, char** argv);

    // Called on the GUI thread with a one-line description of what was caught.
    void setErrorHandler(std::function<void(const QString&)> handler) { m_handler = std::move(handler); }

    bool notify(QObject* receiver, QEvent* event) override;

private:
    void report(const QString& what);

    std::function<void(const QString&)> m_handler;
};

} // namespace nanscope
