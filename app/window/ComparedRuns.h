#pragma once

#include "core/compare/RunComparison.h"
#include "core/scan/ScanConfig.h"

#include <QObject>
#include <QPointer>
#include <QStringList>

#include <atomic>
#include <memory>

class QAction;
class QDockWidget;
class QMainWindow;
class QMenu;
class QThread;

namespace nanscope {

class ComparedRunsOverlay;
class ComparisonView;
class OverviewView;
class RunContext;

// Reads the runs compared with the open one and compares them, on the session thread (where every
// HDF5 read of the window happens; HDF5 may not be thread-safe). The open run is handed over as a
// value (its series and scan, already read), so the session's reader is never opened twice.
class ComparisonWorker : public QObject
{
    Q_OBJECT
public:
    // Thread-safe: requests older than this are skipped when their turn comes (latest wins).
    std::atomic<quint64> latestRequest{0};

public slots:
    // Each run of `paths` opened and scanned with `scanConfig`, the settings the shown run was
    // scanned with, so that their incidents differ by the runs and not by the settings.
    void compare(quint64 request, const nanscope::ComparedRun& primary, const QStringList& paths,
                 const nanscope::ScanConfig& scanConfig);

signals:
    void compared(quint64 request, const nanscope::RunComparison& comparison);
    // `path`: the run that could not be read (empty when the comparison itself failed).
    void failed(quint64 request, const QString& path, const QString& error);
};

// The window's compared runs: File ▸ Compare With Run… adds a run whose series overlay the open
// run's in the overview (one colour per run, a legend that hides a run on click) and whose
// divergence and incident differences a dock lists; Close Compared Runs drops them. The compared
// runs stay while the open run is reloaded or replaced, and are compared with the new one.
class ComparedRuns : public QObject
{
    Q_OBJECT
public:
    ComparedRuns(QMainWindow* window, RunContext* context, OverviewView* overview, QThread* sessionThread);
    ~ComparedRuns() override;

    // Adds the File menu's actions.
    void addActions(QMenu* fileMenu);
    // Compares `path` with the open run (as soon as it and its scan are in).
    void addRun(const QString& path);
    void closeRuns();
    QStringList runs() const { return m_paths; }
    bool hasRuns() const { return !m_paths.isEmpty(); }
    // The last comparison shown; empty runs when none.
    const RunComparison& comparison() const { return m_comparison; }
    ComparedRunsOverlay* overlay() const { return m_overlay; }
    ComparisonView* view() const { return m_view; }

signals:
    // A comparison arrived (ok) or failed; either way the window shows it.
    void comparisonDone(bool ok);
    void stepActivated(qint64 step);
    void message(const QString& text);
    // To the worker.
    void compareRequested(quint64 request, const nanscope::ComparedRun& primary, const QStringList& paths,
                          const nanscope::ScanConfig& scanConfig);

private:
    void chooseRun();
    void requestComparison();
    void dropShown();
    void onCompared(quint64 request, const RunComparison& comparison);
    void onFailed(quint64 request, const QString& path, const QString& error);

    QMainWindow* m_window = nullptr;
    RunContext* m_context = nullptr;
    OverviewView* m_overview = nullptr;
    // Lives on the session thread, and is deleted when that thread ends (before this object).
    QPointer<ComparisonWorker> m_worker;
    ComparedRunsOverlay* m_overlay = nullptr;
    ComparisonView* m_view = nullptr;
    QDockWidget* m_dock = nullptr;
    QAction* m_closeAction = nullptr;
    QStringList m_paths;
    RunComparison m_comparison;
    quint64 m_request = 0;
};

} // namespace nanscope

Q_DECLARE_METATYPE(nanscope::ComparedRun)
Q_DECLARE_METATYPE(nanscope::RunComparison)
Q_DECLARE_METATYPE(nanscope::ScanConfig)
