#pragma once

#include <QWidget>

#include <cstdint>
#include <vector>

class QCheckBox;
class QCustomPlot;
class QCPGraph;
class QCPItemRect;
class QCPItemStraightLine;
class QCPItemText;
class QLabel;
struct QCPRange;

namespace nanscope {

// One step-indexed series on a QCustomPlot. Non-finite values are data, so they are drawn, never
// dropped: NaN, +Inf and -Inf each get their own marker pinned to the plot edge. Skipped steps
// get a marker at the foot. Hovering shows the exact value under the cursor.
class SeriesPlot : public QWidget
{
    Q_OBJECT
public:
    explicit SeriesPlot(const QString& title, QWidget* parent = nullptr);

    void setSeries(const std::vector<int64_t>& steps, const std::vector<double>& values);
    // Drops everything of the run shown: series, overlay, markers, bands, trend, cursor, readout.
    void clear();
    // Zooms out to every step and value, and tells linked plots (the context menu's Reset zoom).
    void resetZoom();
    // The legend name of the main series (default: the title), for plots whose main series is one
    // of several ("max" over a "min" overlay).
    void setSeriesName(const QString& name);
    // A second series drawn over the first (e.g. evaluation loss over training loss).
    void setOverlay(const QString& name, const std::vector<int64_t>& steps, const std::vector<double>& values);
    void setMarkedSteps(const std::vector<int64_t>& steps, const QString& label);
    // Steps with a saved checkpoint, as small flags along the foot of the plot.
    void setCheckpointSteps(const std::vector<int64_t>& steps);
    int checkpointCount() const { return m_checkpointCount; }
    void setLogScale(bool logScale);
    bool logScale() const { return m_logScale; }
    void setSelectedStep(int64_t step);
    void setStepRange(double lower, double upper);
    // A shaded step span with a label (an incident's growth region, or a sharp band at a jump).
    void addBand(double fromStep, double toStep, const QColor& colour, const QString& label);
    void clearBands();
    // A dashed line on the plot's own axes (a fitted trend), in step / value coordinates.
    void setTrendLine(const std::vector<double>& steps, const std::vector<double>& values);

    int nanCount() const { return m_nanCount; }
    int posInfCount() const { return m_posInfCount; }
    int negInfCount() const { return m_negInfCount; }
    int markedCount() const { return m_markedCount; }
    // The incident labels drawn on the bands, for checks that they stay inside the plot.
    const std::vector<QCPItemText*>& bandLabels() const { return m_bandLabels; }
    QString title() const { return m_title; }
    QCustomPlot* plot() const { return m_plot; }
    // Saves as PNG, SVG or PDF by the file's extension.
    bool exportTo(const QString& path, int width = 1200, int height = 500);

signals:
    void stepClicked(qint64 step);
    void stepRangeChanged(double lower, double upper);

private:
    // `fitSteps`: zoom the step axis out to the data (new data); false keeps the user's zoom
    // (a log toggle changes values, not steps).
    void applyData(bool fitSteps = true);
    void rescale(bool fitSteps = true);
    void useLogTicks(bool powersOfTen);
    void placeBandLabels();
    void showContextMenu(const QPoint& position);
    void updateHover(double pixelX);

    QString m_title;
    QCustomPlot* m_plot = nullptr;
    QCheckBox* m_logToggle = nullptr;
    QLabel* m_readout = nullptr;
    QCPGraph* m_values = nullptr;
    QCPGraph* m_overlay = nullptr;
    QCPGraph* m_nanMarkers = nullptr;
    QCPGraph* m_posInfMarkers = nullptr;
    QCPGraph* m_negInfMarkers = nullptr;
    QCPGraph* m_marked = nullptr;
    QCPGraph* m_trend = nullptr;
    QCPGraph* m_checkpoints = nullptr;
    QCPItemStraightLine* m_stepCursor = nullptr;
    QCPItemStraightLine* m_hoverLine = nullptr;
    std::vector<QCPItemRect*> m_bands;
    std::vector<QCPItemText*> m_bandLabels;
    std::vector<int64_t> m_steps;
    std::vector<double> m_data;
    std::vector<int64_t> m_overlaySteps;
    std::vector<double> m_overlayData;
    bool m_logScale = false;
    bool m_syncingRange = false;
    double m_lastHoverStep = -1; // the readout's step, to refresh it when the data changes
    int m_nanCount = 0;
    int m_posInfCount = 0;
    int m_negInfCount = 0;
    int m_markedCount = 0;
    int m_checkpointCount = 0;
};

} // namespace nanscope
