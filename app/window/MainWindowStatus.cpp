// MainWindow: the status line, progress and the error text.
#include "app/window/MainWindow.h"

#include "app/children/ChildProgram.h"
#include "widgets/IncidentModel.h"

#include <QLabel>
#include <QProgressBar>
#include <QStackedWidget>
#include <QToolButton>

#include <algorithm>
#include <limits>

namespace nanscope {

QString MainWindow::statusText() const
{
    return m_statusRun->text();
}

void MainWindow::updateStatus()
{
    const RunSnapshot& run = snapshot();
    int bad = 0;
    for (LayerHealth h : m_context->layerHealth())
        bad += h == LayerHealth::Bad;
    const int incidents = m_incidentModel->rowCount();
    const qint64 lastStep = run.steps.empty() ? -1 : run.steps.back();
    // Logged rows and the steps they span: a log that writes every 43rd step is not "43 steps".
    QString steps = run.steps.empty()      ? tr("no training scalars")
                    : run.steps.size() == 1 ? tr("1 logged step (%1)").arg(lastStep)
                                            : tr("%1 logged steps (%2–%3)")
                                                  .arg(run.steps.size())
                                                  .arg(run.steps.front())
                                                  .arg(lastStep);
    // Series logged at rates of their own (DeepSpeed's learning rate every 10 steps) can span more
    // of the run than /scalars: the status names the whole span.
    qint64 first = run.steps.empty() ? std::numeric_limits<qint64>::max() : run.steps.front();
    qint64 last = lastStep;
    for (const auto& table : run.seriesTables)
        if (!table.steps.empty()) {
            first = std::min<qint64>(first, table.steps.front());
            last = std::max<qint64>(last, table.steps.back());
        }
    if (!run.steps.empty() && (first < run.steps.front() || last > lastStep))
        steps += tr(", steps %1–%2 in all its series").arg(first).arg(last);
    m_statusRun->setText(tr("%1  \u2014  %2, %3 layers (%4 in critical incidents), "
                            "%5 checkpoints, %6 batches, %7%8")
                             .arg(run.directory)
                             .arg(steps)
                             .arg(run.layers.size())
                             .arg(bad)
                             .arg(run.info.checkpoints.size())
                             .arg(run.info.batches.size())
                             .arg(incidents == 1 ? tr("1 incident") : tr("%1 incidents").arg(incidents))
                             .arg(m_grewSinceOpen ? tr(", following live") : QString()));
    if (!m_scanError.isEmpty())
        m_statusRun->setText(m_statusRun->text() + tr("  \u2014  scan failed: %1").arg(m_scanError));
    if (!run.warnings.isEmpty()) {
        m_statusRun->setText(m_statusRun->text() + tr("  —  %1 part(s) could not be read").arg(run.warnings.size()));
        m_statusRun->setToolTip(run.warnings.join("\n"));
    } else {
        m_statusRun->setToolTip(QString());
    }
}

void MainWindow::onProgress(int percent, const QString& what)
{
    // While a report is written, the bar and Cancel are its own: the session's background work
    // (the heatmap, a live run's rows) must not hide them or take them over.
    if (m_exportChild->isRunning())
        return;
    const bool busy = percent < 100 && !what.isEmpty();
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    m_progress->setValue(percent);
    m_progress->setFormat(what + "  %p%");
}

QString MainWindow::errorText() const
{
    return m_pages->currentWidget() == m_errorLabel ? m_errorLabel->text() : QString();
}

} // namespace nanscope
