#pragma once

#include <QList>
#include <QPair>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
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

class StepAxis;

// One step-indexed series on a QCustomPlot. Non-finite values are data, so they are drawn, never
// dropped: NaN, +Inf and -Inf each get their own marker pinned to the plot edge. Skipped steps
// get a marker at the foot. Hovering shows the exact value under the cursor. With smoothing on,
// the smoothed line is drawn over the raw series, which stays faint behind it. A drag pans the
// steps; Ctrl+drag zooms into a box of steps and values.
// Set on a graph another view draws for a compared run (ComparedRunsOverlay), which keeps its legend
// entry while it is hidden.
inline constexpr const char* kComparedRunProperty = "nanscopeComparedRun";

class SeriesPlot : public QWidget
{
    Q_OBJECT
public:
    explicit SeriesPlot(const QString& title, QWidget* parent = nullptr);

    // What the mouse does on a plot, as (what, how) pairs: the one list the plot's tooltip and
    // Help > Keyboard Shortcuts both show, so that they cannot say different things.
    static QList<QPair<QString, QString>> mouseGestures();

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
    // Points of the fitted trend line; 0 when none is drawn.
    int trendPointCount() const;
    // The fitted trend's value at `step` (linear between its points); NaN without a trend there.
    double trendValueAt(double step) const;
    // The logged series as given (steps and raw values, before smoothing).
    const std::vector<int64_t>& steps() const { return m_steps; }
    const std::vector<double>& values() const { return m_data; }
    void setLogScale(bool logScale);
    bool logScale() const { return m_logScale; }
    void setSelectedStep(int64_t step);
    void setStepRange(double lower, double upper);
    // A shaded step span with a label (an incident's growth region, or a sharp band at a jump).
    void addBand(double fromStep, double toStep, const QColor& colour, const QString& label);
    void clearBands();
    // A dashed line on the plot's own axes (a fitted trend), in step / value coordinates.
    // Counts (NaN elements at a step) are drawn as a bar at each logged step, not as a line that
    // ramps between sparse samples.
    void setCounts(bool counts);
    void setTrendLine(const std::vector<double>& steps, const std::vector<double>& values);

    // TensorBoard's EMA smoothing weight (0: off; see smoothEma), on the series and its overlay.
    void setSmoothing(double weight);
    double smoothing() const { return m_smoothing; }
    // The series as drawn: smoothed with the current weight (the raw values when it is 0).
    const std::vector<double>& smoothedValues() const { return m_smoothed; }

    // Labels the step axis in another quantity (wall time, epoch), ticked at its round values;
    // null goes back to steps. The plot keeps step coordinates, so zoom, bands and linked plots
    // are unchanged; the readout names the value at the step too.
    void setStepAxis(std::shared_ptr<const StepAxis> axis);
    const StepAxis* stepAxis() const { return m_stepAxis.get(); }

    // Shows the values at the logged step nearest to `step` in the readout above the plot, with a
    // dotted line there (what hovering does; linked plots show the same step).
    void showReadoutAt(double step);
    // The cursor over the plot at this pixel (a mouse move): the readout there, kept on the pixel
    // through a zoom or pan.
    void updateHover(double pixelX);
    QString readoutText() const;
    // What the marks within `tolerance` steps of `step` say, one line each ("step 200: optimizer
    // step skipped"): the tooltip over a mark and the end of the hover readout. Empty when none.
    QStringList marksNear(double step, double tolerance) const;
    // The names the legend shows, in its order (empty when it is hidden).
    QStringList legendNames() const;

    // Writes the series as CSV: a header `step,value,smoothed`, then one row per logged step,
    // non-finite values as nan, inf, -inf. False with `error` set when the file cannot be written.
    bool exportCsv(const QString& path, QString* error = nullptr) const;

    // The graphs every SeriesPlot draws; views that add graphs of their own add them after these.
    int ownGraphCount() const { return m_ownGraphCount; }

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
    // Names every glyph drawn in the legend, shown when there is more than the line (each replot
    // does this; a view that added graphs calls it to have the legend now).
    void updateLegend();

signals:
    void stepClicked(qint64 step);
    void stepRangeChanged(double lower, double upper);
    // The cursor is over this step, for linked plots to show their values there.
    void hovered(double step);


private:
    struct Mark
    {
        qint64 step;
        QString what;
        bool ofTheValue; // NaN or Inf: the value the readout shows says it already
    };
    std::vector<Mark> marksAt(double step, double tolerance) const;
    void buildHeader(const QString& title);
    void styleAxes();
    void addGraphs(const QString& title);
    void connectMouse();
    // `fitSteps`: zoom the step axis out to the data (new data); false keeps the user's zoom
    // (a log toggle changes values, not steps).
    void applyData(bool fitSteps = true);
    void rescale(bool fitSteps = true);
    void useValueTicker(bool logarithmic);
    void placeBandLabels();
    void showContextMenu(const QPoint& position);
    // Where exported files go by default: the user's documents, never the run folder (nanscope
    // never writes into a run it inspects, and a relative name would land in the working directory).
    QString defaultExportPath(const QString& suffix) const;
    void chooseCsvExport();

    QString m_title;
    QCustomPlot* m_plot = nullptr;
    QCheckBox* m_logToggle = nullptr;
    QLabel* m_readout = nullptr;
    QCPGraph* m_values = nullptr;
    QCPGraph* m_overlay = nullptr;
    QCPGraph* m_rawValues = nullptr;  // faint behind the smoothed line, when smoothing is on
    QCPGraph* m_rawOverlay = nullptr;
    QCPGraph* m_nanMarkers = nullptr;
    QCPGraph* m_posInfMarkers = nullptr;
    QCPGraph* m_negInfMarkers = nullptr;
    QCPGraph* m_marked = nullptr;
    QCPGraph* m_trend = nullptr;
    QCPGraph* m_checkpoints = nullptr;
    QCPItemStraightLine* m_stepCursor = nullptr;
    QCPItemStraightLine* m_hoverLine = nullptr;
    std::shared_ptr<const StepAxis> m_stepAxis;
    std::vector<QCPItemRect*> m_bands;
    std::vector<QCPItemText*> m_bandLabels;
    std::vector<int64_t> m_steps;
    std::vector<double> m_data;
    std::vector<int64_t> m_overlaySteps;
    std::vector<double> m_overlayData;
    std::vector<double> m_smoothed;
    std::vector<double> m_overlaySmoothed;
    double m_smoothing = 0;
    int m_ownGraphCount = 0;
    bool m_logScale = false;
    bool m_syncingRange = false;
    std::optional<double> m_hoverStep; // the readout's step, to refresh it when the data changes
    std::optional<double> m_hoverPixel; // where the cursor was over this plot: a zoom moves its step
    int m_nanCount = 0;
    int m_posInfCount = 0;
    int m_negInfCount = 0;
    int m_markedCount = 0;
    int m_checkpointCount = 0;
};

} // namespace nanscope
