#include "MainWindow.h"

#include "core/RunFormat.h"
#include "core/RunReader.h"
#include "widgets/SeriesPlot.h"

#include <QApplication>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace nanscope {

RunOverview loadRunOverview(const QString& directory)
{
    RunOverview overview;
    overview.directory = directory;
    auto reader = RunReader::open(directory.toStdString());
    if (!reader) {
        overview.error = QString::fromStdString(reader.error());
        return overview;
    }
    const RunInfo& info = (*reader)->info();
    overview.runName = QString::fromStdString(info.runName);
    overview.steps = (*reader)->steps(runformat::kScalars);
    for (const auto& name : info.table(runformat::kScalars)->datasets) {
        auto series = (*reader)->readSeries(runformat::kScalars, name);
        if (!series) {
            overview.error = QString::fromStdString(series.error());
            return overview;
        }
        overview.scalars[name] = std::move(*series);
    }
    overview.tableCount = int(info.tables.size());
    overview.checkpointCount = int(info.checkpoints.size());
    overview.batchCount = int(info.batches.size());
    return overview;
}

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_pages(new QStackedWidget(this))
    , m_errorLabel(new QLabel(this))
    , m_placeholder(new QLabel(tr("Open a run directory with File \u25B8 Open Run\u2026"), this))
{
    setWindowTitle("nanscope");
    resize(1200, 800);

    auto* fileMenu = menuBar()->addMenu(tr("&File"));
    fileMenu->addAction(tr("&Open Run\u2026"), QKeySequence::Open, this, &MainWindow::chooseRun);
    fileMenu->addSeparator();
    fileMenu->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

    m_placeholder->setAlignment(Qt::AlignCenter);
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setAlignment(Qt::AlignCenter);
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setStyleSheet("QLabel { color: #b00020; font-size: 14px; padding: 24px; }");

    auto* plots = new QWidget(this);
    auto* layout = new QVBoxLayout(plots);
    m_lossPlot = new SeriesPlot(tr("loss"), plots);
    m_gradNormPlot = new SeriesPlot(tr("grad norm"), plots);
    m_lossPlot->setLogScale(true);
    m_gradNormPlot->setLogScale(true);
    layout->addWidget(m_lossPlot);
    layout->addWidget(m_gradNormPlot);

    m_pages->addWidget(m_placeholder);
    m_pages->addWidget(m_errorLabel);
    m_pages->addWidget(plots);
    setCentralWidget(m_pages);
    statusBar()->showMessage(tr("No run loaded"));

    connect(&m_loader, &QFutureWatcher<RunOverview>::finished, this, [this] { showOverview(m_loader.result()); });
}

void MainWindow::chooseRun()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open Run Directory"));
    if (!dir.isEmpty())
        openRun(dir);
}

void MainWindow::openRun(const QString& directory)
{
    statusBar()->showMessage(tr("Loading %1\u2026").arg(directory));
    m_loader.setFuture(QtConcurrent::run(loadRunOverview, directory));
}

QString MainWindow::errorText() const
{
    return m_pages->currentWidget() == m_errorLabel ? m_errorLabel->text() : QString();
}

void MainWindow::showOverview(const RunOverview& overview)
{
    m_overview = overview;
    if (!overview.error.isEmpty()) {
        m_errorLabel->setText(tr("Cannot open this run.\n\n%1").arg(overview.error));
        m_pages->setCurrentWidget(m_errorLabel);
        statusBar()->showMessage(tr("Failed to load %1").arg(overview.directory));
    } else {
        auto series = [&](const char* name) {
            auto it = overview.scalars.find(name);
            return it == overview.scalars.end() ? std::vector<double>() : it->second;
        };
        m_lossPlot->setSeries(overview.steps, series("loss"));
        m_gradNormPlot->setSeries(overview.steps, series("grad_norm"));
        m_pages->setCurrentIndex(2);
        setWindowTitle(QString("%1 \u2014 nanscope").arg(overview.runName));
        statusBar()->showMessage(tr("%1: %2 steps, %3 tables, %4 checkpoints, %5 batches")
                                     .arg(overview.directory)
                                     .arg(overview.steps.size())
                                     .arg(overview.tableCount)
                                     .arg(overview.checkpointCount)
                                     .arg(overview.batchCount));
    }
    emit runLoaded(overview.error.isEmpty());
    if (!m_screenshotPath.isEmpty()) {
        // Let queued replots run before grabbing the window.
        QTimer::singleShot(50, this, [this] {
            const bool saved = grab().save(m_screenshotPath);
            emit screenshotDone(saved);
        });
    }
}

void MainWindow::screenshotWhenLoaded(const QString& path)
{
    m_screenshotPath = path;
}

} // namespace nanscope
