#pragma once

#include "EventMarkers.h"
#include "ViewData.h"
#include "core/run/StepAxis.h"
#include "core/scan/Incident.h"

#include <QWidget>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

class QComboBox;
class QLabel;
class QSlider;
class QSplitter;
class QToolButton;

namespace nanscope {

class RunContext;
class SeriesPlot;

// Draws incidents on one plot: a sudden blow-up as a sharp band at its onset, a gradual one as a
// shaded region from onset to failure. `shownSeries` is what the plot shows, in the evidence's
// terms ("scalars/grad_norm"): a gradual blow-up measured on it also gets its fitted growth line
// (a growth measured on the loss or on a module's activations is in other units than the grad norm).
void markIncidents(SeriesPlot& plot, const std::vector<Incident>& incidents, bool labels, const QString& shownSeries);

// The stacked scalar plots on one shared step axis: zooming or panning one moves them all, and
// hovering one shows every plot's value at that step. Loss, grad norm, learning rate and loss
// scale are always there when logged; any other logged series (an eval metric, the epoch) can be
// added from the Series menu. One smoothing slider smooths every plot.
//
// A series is named by a key: its name for the /scalars table ("loss"), "table/name" for a table
// of another logging rate ("eval/eval_accuracy").
class OverviewView : public QWidget
{
    Q_OBJECT
public:
    explicit OverviewView(QWidget* parent = nullptr);

    void setScalars(const std::vector<int64_t>& steps, const std::map<std::string, std::vector<double>>& scalars,
                    const std::vector<int64_t>& skippedSteps);
    // Series logged at rates of their own: an evaluation loss is overlaid on the loss plot (or is
    // the loss plot, when no training loss is logged); every series can be added as a plot.
    void setSeriesTables(const std::vector<SeriesTable>& tables);
    // A line above the plots saying where the run came from and what it lacks (no per-layer data,
    // no batches to replay), for runs read from other tools' logs; empty hides it.
    void setSourceSummary(const QString& summary, const QString& details);
    QString sourceSummary() const;
    // Shows the run `context` holds and follows it (runClosed, runLoaded, runGrew, scanChanged, stepSelected).
    void follow(const RunContext* context);
    void setSelectedStep(int64_t step);
    // Drops everything of the run shown (RunContext::runClosed). Added plots stay, empty: the
    // next run shows the same series when it logs them.
    void clear();
    void setCheckpointSteps(const std::vector<int64_t>& steps);
    void showStepRange(double lower, double upper);
    // Zooms every plot out to all its steps and values.
    void resetZoom();
    // Marks incidents on every plot: a sudden blow-up as a sharp band at its onset, a gradual one
    // as a shaded growth region from onset to failure with its fitted trend on the grad-norm plot.
    void setIncidents(const std::vector<Incident>& incidents);
    // The quantity a blow-up began in (its precursor: a module's output or a parameter's
    // norm, the incident's evidence series `evidenceSeries`), drawn under the loss on the same step
    // axis with the growth fitted on it, named `title`; an empty title or no values hides it. Not
    // a Series-menu plot: the incident shown decides it.
    void showPrecursor(const QString& title, const QString& evidenceSeries, const std::vector<int64_t>& steps,
                       const std::vector<double>& values);
    // Marks what the training's defences did (rollbacks, buffers restored, incident captures)
    // on the loss plot; the markers, for checks.
    void setTimelineEvents(const std::vector<TimelineEvent>& events);
    const EventMarkers* timelineEvents() const { return m_lossEvents; }

    // Every logged series that the Series menu offers (all but the fixed plots'), as keys.
    QStringList addableSeries() const;
    // Shows a plot of a logged series under the others, on the same step axis (the one shown
    // already, if it is); null for a key the run does not log.
    SeriesPlot* addSeriesPlot(const QString& key);
    void removeSeriesPlot(const QString& key);

    // The other x axes the run logs (wall time, epoch); the X axis box offers them. A run that
    // lacks the axis shown goes back to steps.
    void setStepAxes(const StepAxes& axes);
    // Labels every plot's step axis in steps, wall time or epochs (the X axis box's choice). The
    // choice is kept: false when the run shown does not log that quantity, which then shows
    // steps until a run that logs it is shown.
    bool setStepAxisKind(StepAxisKind kind);
    // The axis shown: the one chosen, or steps while the run does not log it.
    StepAxisKind stepAxisKind() const { return shownStepAxis() ? m_stepAxisKind : StepAxisKind::Step; }
    bool hasStepAxis(StepAxisKind kind) const;

    // TensorBoard's EMA smoothing weight, 0..0.99, on every plot (the slider's value).
    void setSmoothing(double weight);
    double smoothing() const;
    // Every plot's readout at the logged step nearest to `step` (what hovering a plot does).
    void showReadoutAt(double step);

    // The plot of a series by its key; null when none is shown for it.
    SeriesPlot* plot(const QString& key) const;
    // The plot of the incident shown's precursor (showPrecursor); hidden while there is none.
    SeriesPlot* precursorPlot() const;
    QList<SeriesPlot*> plots() const { return m_plots; }

signals:
    void stepClicked(qint64 step);
    // Reset zoom was asked for: the views that follow the Overview's steps reset theirs too.
    void zoomReset();
    // A plot was added from the Series menu (or addSeriesPlot), with its series and the incidents.
    void plotAdded(SeriesPlot* plot);

private:
    // A plot's key ("grad_norm") as an incident's evidence names the series it shows.
    static QString evidenceSeriesOf(const QString& key);
    SeriesPlot* createPlot(const QString& key, const QString& title);
    // Feeds an added plot its series from the run's series; hides it when the run lacks it.
    void showAddedSeries(SeriesPlot* plot, const QString& key);
    void showFixedSeriesOfOwnRate();
    void showEvaluationLoss();
    void populateSeriesMenu();
    void linkRanges(SeriesPlot* source, double lower, double upper);
    std::shared_ptr<const StepAxis> shownStepAxis() const;
    void updateAxisChoice();

    QLabel* m_sourceSummary = nullptr;
    QToolButton* m_seriesButton = nullptr;
    QSlider* m_smoothingSlider = nullptr;
    QComboBox* m_axisChoice = nullptr;
    QLabel* m_smoothingValue = nullptr;
    QSplitter* m_splitter = nullptr;
    QList<SeriesPlot*> m_plots;
    QStringList m_keys; // m_plots[i] shows m_keys[i]
    int m_fixedPlotCount = 0;

    // The run's series, for plots added after it arrived.
    std::vector<int64_t> m_steps;
    std::map<std::string, std::vector<double>> m_scalars;
    std::vector<int64_t> m_skippedSteps;
    std::vector<SeriesTable> m_seriesTables;
    std::shared_ptr<const StepAxis> m_wallTimeAxis, m_epochAxis;
    StepAxisKind m_stepAxisKind = StepAxisKind::Step; // the user's choice
    // What every plot shows beside its series, for plots added after it arrived.
    std::vector<Incident> m_incidents;
    std::vector<int64_t> m_checkpointSteps;
    std::optional<int64_t> m_selectedStep;
    EventMarkers* m_lossEvents = nullptr; // on the loss plot, made at the first events
};

} // namespace nanscope
