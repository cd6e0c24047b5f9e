// MainWindow: the runs a user opens: the recent-runs menu, drag and drop, the open dialogs and the report export.
#include "app/window/MainWindow.h"

#include "app/children/ChildProgram.h"
#include "app/codecs/ReplayJson.h"
#include "app/window/RankControls.h"
#include "widgets/ReplayView.h"

#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMenu>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QToolButton>

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

QString MainWindow::dialogFolder() const
{
    // Beside the run shown, where the user is working, else where the last run opened is, else
    // home.
    if (m_context->hasRun())
        return QFileInfo(QFileInfo(snapshot().directory).absoluteFilePath()).absolutePath();
    const QString last = QSettings().value("lastOpenDir").toString();
    return !last.isEmpty() && QDir(last).exists() ? last : QDir::homePath();
}

void MainWindow::chooseRun()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Run Directory"), dialogFolder());
    if (dir.isEmpty())
        return;
    openRun(dir);
}

void MainWindow::chooseLogFile()
{
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Open Training Log"), dialogFolder(),
        tr("Training logs (run.h5 trainer_state.json metrics.csv *tfevents* *.wandb *.log *.txt *.out *.json "
           "*.jsonl *.csv *.tsv *.ckpt);;All files (*)"));
    if (file.isEmpty())
        return;
    openRun(file);
}

void MainWindow::exportReport()
{
    if (!m_context->hasRun())
        return;
    // Never into the run directory by default: nanscope does not write where it inspects.
    const QString suggested =
        QDir(dialogFolder()).filePath(QString::fromStdString(snapshot().info.runName) + "-incident-report.html");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Incident Report"), suggested,
                                                      tr("HTML (*.html);;PDF (*.pdf);;Markdown (*.md);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    exportReportTo(path);
}

void MainWindow::exportReportTo(const QString& path)
{
    if (!m_context->hasRun())
        return;
    if (m_exportChild->isRunning())
        cancelReportExport(); // says so, and leaves no part file of it
    // In a child process: the report replays saved steps, which runs the checkpoints' code. It
    // takes seconds (each critical incident is replayed and triaged), so it says how far it is.
    m_exportPath = path;
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setFormat(tr("Writing report  %p%"));
    m_progress->setVisible(true);
    m_cancel->setVisible(true);
    statusBar()->showMessage(tr("Writing %1\u2026").arg(path));
    m_exportChild->setProgram(m_replayProgram.isEmpty() ? nanscopeProgram() : m_replayProgram);
    QStringList arguments{"report", snapshot().directory, "-o", path, "--progress-lines"};
    if (!m_scanSettingsFile.isEmpty())
        arguments << "--config" << m_scanSettingsFile;
    // The step the user has just replayed is not replayed again: the child gets its replay.
    m_replayForReport.reset();
    if (const auto replayed = m_replay->replayAsTrained(); replayed && m_rankControls->shownRank() < 0) {
        auto file = std::make_unique<QTemporaryFile>(QDir::temp().filePath("nanscope-replay-XXXXXX.json"));
        ReplayOptions options;
        options.dtype = replayed->dtype.toStdString();
        const QByteArray json =
            QJsonDocument(replayResultToJson(replayed->result, replayed->result.step, options)).toJson(QJsonDocument::Compact);
        if (file->open() && file->write(json) == json.size() && file->flush()) {
            arguments << "--replayed" << file->fileName();
            m_replayForReport = std::move(file);
        }
    }
    m_exportChild->start(arguments,
                         [this, path](const ChildOutcome& outcome) {
                             m_exportPath.clear();
                             m_progress->setVisible(false);
                             m_cancel->setVisible(false);
                             statusBar()->showMessage(outcome.succeeded() ? tr("Wrote %1").arg(path)
                                                                          : tr("Report failed: %1").arg(outcome.message),
                                                      10000);
                             emit reportExported(outcome.succeeded());
                         });
}

void MainWindow::cancelReportExport()
{
    m_exportChild->cancel();
    // The report is written to a temporary file and renamed over `path` at the end: a cancelled
    // one leaves no report at `path`; a PDF's ".part" file, if it was being printed, goes too.
    QFile::remove(m_exportPath + ".part");
    statusBar()->showMessage(tr("Report cancelled: %1 was not written").arg(m_exportPath), 10000);
    m_exportPath.clear();
    m_progress->setVisible(false);
    m_cancel->setVisible(false);
    emit reportExported(false);
}

} // namespace nanscope
