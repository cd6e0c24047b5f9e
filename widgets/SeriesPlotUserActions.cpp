// What a user does with a plot: hover for the readout, the mouse gestures (drag, wheel, Ctrl+drag,
// double-click), the context menu, and exports of the plot and its data.
#include "SeriesPlot.h"

#include "SeriesData.h"
#include "core/run/StepAxis.h"

#include <qcustomplot.h>

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>
#include <QSvgGenerator>
#include <QToolTip>

#include <cmath>

namespace nanscope {

namespace {
// Pixels either side of a mark within which hovering names it.
constexpr double kMarkHoverPixels = 5;
} // namespace

void SeriesPlot::connectMouse()
{
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        updateHover(event->position().x());
        // Over a mark: what happened there, at that step (the plot's own tooltip says the gestures).
        const double x = event->position().x();
        const double step = m_plot->xAxis->pixelToCoord(x);
        const double tolerance = std::abs(m_plot->xAxis->pixelToCoord(x + kMarkHoverPixels) - step);
        const QStringList marks = marksNear(step, tolerance);
        if (!marks.isEmpty())
            QToolTip::showText(event->globalPosition().toPoint(), marks.join("\n"), m_plot,
                               QRect(event->position().toPoint() - QPoint(int(kMarkHoverPixels), 200),
                                     QSize(2 * int(kMarkHoverPixels), 400)));
    });
    // Ctrl+drag draws a box to zoom into, steps and values; a plain drag keeps panning the steps.
    // (QCustomPlot emits mousePress before it decides between a drag and a selection box.)
    QStringList gestures;
    for (const auto& [what, how] : mouseGestures())
        gestures << how + ": " + what;
    m_plot->setToolTip(gestures.join("\n"));
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        const bool boxZoom = event->button() == Qt::LeftButton && (event->modifiers() & Qt::ControlModifier);
        m_plot->setSelectionRectMode(boxZoom ? QCP::srmZoom : QCP::srmNone);
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        emit stepClicked(qint64(std::llround(m_plot->xAxis->pixelToCoord(event->position().x()))));
    });
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this](const QCPRange& range) {
        // A zoom or pan under a still cursor puts another step under it: the readout follows.
        if (m_hoverPixel) {
            const double pixel = *m_hoverPixel;
            showReadoutAt(m_plot->xAxis->pixelToCoord(pixel));
            m_hoverPixel = pixel;
        }
        if (!m_syncingRange)
            emit stepRangeChanged(range.lower, range.upper);
    });
}

QList<QPair<QString, QString>> SeriesPlot::mouseGestures()
{
    return {{tr("pan the steps"), tr("drag")},
            {tr("zoom the steps"), tr("mouse wheel")},
            {tr("zoom into a box of steps and values"), tr("Ctrl+drag")},
            {tr("select a step"), tr("double-click")},
            {tr("reset the zoom"), tr("right-click \u25B8 Reset zoom, or Overview's Reset zoom")}};
}

void SeriesPlot::updateHover(double pixelX)
{
    if (m_steps.empty())
        return;
    const double step = m_plot->xAxis->pixelToCoord(pixelX);
    showReadoutAt(step);
    m_hoverPixel = pixelX; // after showReadoutAt, which a linked plot also calls with no pixel
    emit hovered(step);
}

void SeriesPlot::showReadoutAt(double step)
{
    m_hoverStep = step;
    m_hoverPixel.reset();
    const int64_t i = nearestStepIndex(m_steps, step);
    if (i < 0 || size_t(i) >= m_data.size())
        return;
    const auto row = size_t(i);
    QString text = QString("step %1").arg(m_steps[row]);
    if (m_stepAxis)
        text += QString(" (%1)").arg(QString::fromStdString(m_stepAxis->label(double(m_steps[row]))));
    text += QString("   %1 = %2").arg(m_values->name(), readoutValue(m_data[row]));
    if (m_smoothing > 0 && std::isfinite(m_data[row]))
        text += tr("  (smoothed %1)").arg(readoutValue(m_smoothed[row]));
    // The overlay at its own nearest step, named when it is not the same step (eval every 100).
    const int64_t o = nearestStepIndex(m_overlaySteps, step);
    if (o >= 0 && size_t(o) < m_overlayData.size() && m_overlay->visible()) {
        const auto overlayRow = size_t(o);
        text += QString("   %1 = %2").arg(m_overlay->name(), readoutValue(m_overlayData[overlayRow]));
        if (m_overlaySteps[overlayRow] != m_steps[row])
            text += tr(" (step %1)").arg(m_overlaySteps[overlayRow]);
    }
    // The marks at that very step, named (a checkpoint, a skipped step).
    QStringList marks;
    for (const Mark& mark : marksAt(double(m_steps[row]), 0.5))
        if (!mark.ofTheValue)
            marks << mark.what;
    if (!marks.isEmpty())
        text += QString("   \u2014 %1").arg(marks.join("; "));
    m_readout->setText(text);
    m_hoverLine->point1->setCoords(double(m_steps[row]), 0);
    m_hoverLine->point2->setCoords(double(m_steps[row]), 1);
    m_hoverLine->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString SeriesPlot::readoutText() const
{
    return m_readout->text();
}

QString SeriesPlot::defaultExportPath(const QString& suffix) const
{
    QString folder = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (folder.isEmpty() || !QDir(folder).exists())
        folder = QDir::homePath();
    QString name = m_values->name();
    name.replace(QRegularExpression("[^A-Za-z0-9._-]+"), "_");
    return QDir(folder).filePath(name + suffix);
}

bool SeriesPlot::exportCsv(const QString& path, QString* error) const
{
    QSaveFile file(path);
    const bool written = file.open(QIODevice::WriteOnly | QIODevice::Text)
                         && file.write(seriesCsv(m_steps, m_data, m_smoothed).toUtf8()) >= 0 && file.commit();
    if (!written && error)
        *error = tr("Cannot write %1: %2").arg(path, file.errorString());
    return written;
}

void SeriesPlot::chooseCsvExport()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Data as CSV"), defaultExportPath(".csv"),
                                                      tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!exportCsv(path, &error))
        QMessageBox::warning(this, tr("Export Data as CSV"), error);
}

void SeriesPlot::showContextMenu(const QPoint& position)
{
    QMenu menu(this);
    QAction* log = menu.addAction(tr("Logarithmic scale"));
    log->setCheckable(true);
    log->setChecked(m_logScale);
    connect(log, &QAction::toggled, this, &SeriesPlot::setLogScale);
    menu.addAction(tr("Reset zoom"), this, &SeriesPlot::resetZoom);
    menu.addSeparator();
    menu.addAction(tr("Export plot\u2026"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export Plot"), defaultExportPath(".png"),
                                                          tr("Images (*.png *.svg *.pdf)"));
        if (!path.isEmpty())
            exportTo(path);
    });
    menu.addAction(tr("Export data as CSV\u2026"), this, &SeriesPlot::chooseCsvExport)->setEnabled(!m_steps.empty());
    menu.exec(m_plot->mapToGlobal(position));
}

bool SeriesPlot::exportTo(const QString& path, int width, int height)
{
    const QString lower = path.toLower();
    if (lower.endsWith(".pdf"))
        return m_plot->savePdf(path, width, height);
    if (lower.endsWith(".svg")) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(QSize(width, height));
        generator.setViewBox(QRect(0, 0, width, height));
        generator.setTitle(m_title);
        QCPPainter painter;
        if (!painter.begin(&generator))
            return false;
        m_plot->toPainter(&painter, width, height);
        painter.end();
        return true;
    }
    return m_plot->savePng(path, width, height);
}

} // namespace nanscope
