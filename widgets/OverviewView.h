#pragma once

#include "core/scan/Incident.h"

#include <QWidget>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

class QLabel;

namespace nanscope {

class SeriesPlot;

// Draws incidents on one plot: a sudden blow-up as a sharp band at its onset, a gradual one as a
// shaded region from onset to failure; `trend` adds the fitted growth line (grad-norm plots).
void markIncidents(SeriesPlot& plot, const std::vector<Incident>& incidents, bool labels, bool trend);

// The stacked scalar plots (loss, grad norm, learning rate, loss scale) on one shared step axis:
// zooming or panning one moves them all.
class OverviewView : public QWidget
{
    Q_OBJECT
public:
    explicit OverviewView(QWidget* parent = nullptr);

    void setScalars(const std::vector<int64_t>& steps, const std::map<std::string, std::vector<double>>& scalars,
                    const std::vector<int64_t>& skippedSteps);
    // The evaluation loss logged at a rate of its own, overlaid on the loss plot.
    void setEvaluation(const std::vector<int64_t>& steps, const std::vector<double>& evalLoss);
    // A line above the plots saying where the run came from and what it lacks (no per-layer data,
    // no batches to replay), for runs read from other tools' logs; empty hides it.
    void setSourceSummary(const QString& summary, const QString& details);
    QString sourceSummary() const;
    void setSelectedStep(int64_t step);
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    void setCheckpointSteps(const std::vector<int64_t>& steps);
    void showStepRange(double lower, double upper);
    // Marks incidents on every plot: a sudden blow-up as a sharp band at its onset, a gradual one
    // as a shaded growth region from onset to failure with its fitted trend on the grad-norm plot.
    void setIncidents(const std::vector<Incident>& incidents);

    SeriesPlot* plot(const QString& scalar) const;
    QList<SeriesPlot*> plots() const { return m_plots; }

signals:
    void stepClicked(qint64 step);

private:
    void linkRanges(SeriesPlot* source, double lower, double upper);

    QLabel* m_sourceSummary = nullptr;
    QList<SeriesPlot*> m_plots;
    QStringList m_scalarNames;
};

} // namespace nanscope
