#include "app/window/ComparedRuns.h"
#include "app/window/MainWindow.h"

#include "widgets/RunContext.h"

#include "core/run/MemoryRunSource.h"
#include "core/run/RunFormat.h"
#include "core/open/CompareRunSources.h"
#include "core/open/OpenRun.h"
#include "widgets/ComparedRunsOverlay.h"
#include "widgets/ComparisonView.h"
#include "widgets/OverviewView.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QMainWindow>
#include <QMenu>
#include <QThread>

#include <algorithm>

namespace nanscope {

namespace {

// The open run as a comparison sees it, from what the window already holds: its series through
// the same reading as any other run's (readComparableSeries), and its scan.
ComparedRun primaryRun(const RunSnapshot& snapshot, const ScanReport& scan)
{
    RunInfo info;
    info.directory = snapshot.info.directory;
    info.runName = snapshot.info.runName;
    MemoryRunSource source(info);
    source.addSeriesTable(runformat::kScalars, snapshot.steps, snapshot.scalars);
    for (const SeriesTable& table : snapshot.seriesTables)
        source.addSeriesTable(table.name, table.steps, table.series);
    ComparedRun run;
    run.label = snapshot.directory.toStdString();
    run.format = snapshot.info.source.format;
    if (auto series = readComparableSeries(source))
        run.series = std::move(*series);
    run.scan = scan;
    return run;
}

} // namespace

void ComparisonWorker::compare(quint64 request, const ComparedRun& primary, const QStringList& paths,
                               const ScanConfig& scanConfig)
{
    std::vector<ComparedRun> runs{primary};
    for (const QString& path : paths) {
        if (request != latestRequest)
            return; // a newer request replaces this one
        auto source = openRun(path.toStdString());
        if (!source) {
            emit failed(request, path, tr("Cannot compare with %1: %2").arg(path, QString::fromStdString(source.error())));
            return;
        }
        auto run = loadComparedRun(**source, path.toStdString(), scanConfig);
        if (!run) {
            emit failed(request, path, tr("Cannot compare with %1: %2").arg(path, QString::fromStdString(run.error())));
            return;
        }
        runs.push_back(std::move(*run));
    }
    auto comparison = compareRuns(std::move(runs));
    if (!comparison) {
        emit failed(request, QString(), QString::fromStdString(comparison.error()));
        return;
    }
    emit compared(request, *comparison);
}

ComparedRuns::ComparedRuns(QMainWindow* window, RunContext* context, OverviewView* overview, QThread* sessionThread)
    : QObject(window)
    , m_window(window)
    , m_context(context)
    , m_overview(overview)
    , m_worker(new ComparisonWorker())
    , m_overlay(new ComparedRunsOverlay(overview))
    , m_view(new ComparisonView(window))
{
    static const bool registered = [] {
        qRegisterMetaType<ComparedRun>();
        qRegisterMetaType<RunComparison>();
        qRegisterMetaType<ScanConfig>();
        return true;
    }();
    (void)registered;
    m_worker->moveToThread(sessionThread);
    connect(sessionThread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(this, &ComparedRuns::compareRequested, m_worker, &ComparisonWorker::compare);
    connect(m_worker, &ComparisonWorker::compared, this, &ComparedRuns::onCompared);
    connect(m_worker, &ComparisonWorker::failed, this, &ComparedRuns::onFailed);

    // Beside the incident list: the open run's incidents on the left, how the others' differ here.
    m_dock = new QDockWidget(tr("Compared Runs"), window);
    m_dock->setObjectName("ComparedRunsDock");
    m_dock->setWidget(m_view);
    window->addDockWidget(Qt::BottomDockWidgetArea, m_dock);
    if (auto* incidents = window->findChild<QDockWidget*>("IncidentsDock"))
        window->splitDockWidget(incidents, m_dock, Qt::Horizontal);
    m_dock->hide();
    connect(m_view, &ComparisonView::stepActivated, this, &ComparedRuns::stepActivated);

    connect(context, &RunContext::runClosed, this, &ComparedRuns::dropShown);
    connect(context, &RunContext::scanChanged, this, &ComparedRuns::requestComparison);
}

ComparedRuns::~ComparedRuns()
{
    // Nothing the worker sends may arrive after this; it may be gone already with its thread.
    if (m_worker) {
        m_worker->latestRequest = ++m_request;
        disconnect(m_worker, nullptr, this, nullptr);
    }
}

void ComparedRuns::addActions(QMenu* fileMenu)
{
    fileMenu->addAction(tr("&Compare With Run\u2026"), this, &ComparedRuns::chooseRun);
    m_closeAction = fileMenu->addAction(tr("Close Compared Runs"), this, &ComparedRuns::closeRuns);
    m_closeAction->setEnabled(false);
}

void ComparedRuns::chooseRun()
{
    const auto* window = qobject_cast<const MainWindow*>(m_window);
    const QString path =
        QFileDialog::getExistingDirectory(m_window, tr("Compare With Run"), window ? window->dialogFolder() : QString());
    if (!path.isEmpty())
        addRun(path);
}

void ComparedRuns::addRun(const QString& path)
{
    if (m_paths.contains(path))
        return;
    m_paths << path;
    if (m_closeAction)
        m_closeAction->setEnabled(true);
    if (m_dock->isHidden()) {
        m_dock->show();
        // Half the bottom area each: beside the incident list it opened a few dozen pixels wide.
        if (auto* incidents = m_window->findChild<QDockWidget*>("IncidentsDock"); incidents && !incidents->isHidden()) {
            const int half = std::max(320, m_window->width() / 2);
            m_window->resizeDocks({incidents, m_dock}, {half, half}, Qt::Horizontal);
        }
    }
    m_view->setMessage(tr("Comparing with %1\u2026").arg(path));
    requestComparison();
}

void ComparedRuns::closeRuns()
{
    m_paths.clear();
    if (m_worker)
        m_worker->latestRequest = ++m_request;
    dropShown();
    m_dock->hide();
    if (m_closeAction)
        m_closeAction->setEnabled(false);
}

void ComparedRuns::dropShown()
{
    m_overlay->clear();
    m_view->clear();
    m_comparison = RunComparison();
}

void ComparedRuns::requestComparison()
{
    // The open run's scan is part of the comparison: wait for it (scanChanged calls again).
    if (m_paths.isEmpty() || !m_context->hasRun() || !m_context->scanned())
        return;
    if (!m_worker)
        return;
    const quint64 request = ++m_request;
    m_worker->latestRequest = request;
    emit compareRequested(request, primaryRun(m_context->snapshot(), m_context->scan()), m_paths, m_context->scanConfig());
}

void ComparedRuns::onCompared(quint64 request, const RunComparison& comparison)
{
    if (request != m_request)
        return;
    m_comparison = comparison;
    m_overlay->show(m_comparison);
    m_view->setMessage(QString());
    m_view->setComparison(m_comparison);
    emit comparisonDone(true);
}

void ComparedRuns::onFailed(quint64 request, const QString& path, const QString& error)
{
    if (request != m_request)
        return;
    // A run that cannot be read leaves the comparison; the others are compared without it.
    m_paths.removeAll(path);
    if (m_closeAction)
        m_closeAction->setEnabled(!m_paths.isEmpty());
    if (!m_paths.isEmpty() && !path.isEmpty())
        requestComparison();
    m_view->setMessage(error);
    emit message(error);
    emit comparisonDone(false);
}

} // namespace nanscope
