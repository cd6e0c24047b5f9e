// MainWindow: the runs a user opens: the recent-runs menu, drag and drop, the open dialogs and the report export.
#include "MainWindow.h"

#include "ChildProgram.h"

#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>

#include <algorithm>

namespace nanscope {

namespace {
constexpr int kMaxRecentRuns = 8;
} // namespace

QStringList MainWindow::recentRuns() const
{
    // A folder deleted since (a temporary run, an unplugged disk) is not offered.
    QStringList runs = QSettings().value("recentRuns").toStringList();
    runs.erase(std::remove_if(runs.begin(), runs.end(), [](const QString& run) { return !QFileInfo::exists(run); }),
               runs.end());
    return runs;
}

void MainWindow::rememberRun(const QString& directory)
{
    QStringList runs = recentRuns();
    const QString path = QFileInfo(directory).absoluteFilePath();
    runs.removeAll(path);
    runs.prepend(path);
    while (runs.size() > kMaxRecentRuns)
        runs.removeLast();
    QSettings().setValue("recentRuns", runs);
    updateRecentMenu();
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList runs = recentRuns();
    for (const QString& run : runs)
        m_recentMenu->addAction(run, this, [this, run] { openRun(run); });
    m_recentMenu->setEnabled(!runs.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty())
        return;
    openRun(urls.first().toLocalFile());
    event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    QMainWindow::closeEvent(event);
}

void MainWindow::chooseRun()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Run Directory"),
                                                          QSettings().value("lastOpenDir").toString());
    if (dir.isEmpty())
        return;
    QSettings().setValue("lastOpenDir", QFileInfo(dir).absolutePath());
    openRun(dir);
}

void MainWindow::chooseLogFile()
{
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Open Training Log"), QSettings().value("lastOpenDir").toString(),
        tr("Training logs (run.h5 trainer_state.json metrics.csv *tfevents* *.log *.txt *.out *.ckpt);;All files (*)"));
    if (file.isEmpty())
        return;
    QSettings().setValue("lastOpenDir", QFileInfo(file).absolutePath());
    openRun(file);
}

void MainWindow::exportReport()
{
    if (!m_context->hasRun())
        return;
    // Never into the run directory by default: nanscope does not write where it inspects.
    const QString suggested = QDir::home().filePath(QString::fromStdString(snapshot().info.runName) + "-incident-report.html");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Incident Report"), suggested,
                                                      tr("HTML (*.html);;PDF (*.pdf);;Markdown (*.md);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    // In a child process: the report replays saved steps, which runs the checkpoints' code.
    m_progress->setRange(0, 0);
    m_progress->setFormat(tr("Writing report"));
    m_progress->setVisible(true);
    statusBar()->showMessage(tr("Writing %1…").arg(path));
    m_exportChild->setProgram(m_replayProgram.isEmpty() ? nanscopeProgram() : m_replayProgram);
    m_exportChild->start({"report", snapshot().directory, "-o", path}, [this, path](const ChildOutcome& outcome) {
        m_progress->setRange(0, 100);
        m_progress->setVisible(false);
        statusBar()->showMessage(outcome.succeeded() ? tr("Wrote %1").arg(path) : tr("Report failed: %1").arg(outcome.message),
                                 10000);
    });
}

} // namespace nanscope
