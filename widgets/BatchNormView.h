#pragma once

#include "ViewData.h"

#include "core/scan/LayerHealth.h"
#include "core/tensor/BatchNormHealth.h"

#include <QWidget>

class QComboBox;
class QLabel;

namespace nanscope {

class RunContext;
class SeriesPlot;

// Running mean and variance ranges of each normalisation layer over steps. These are buffers,
// not parameters, so gradient checks never see them go bad: here NaN shows as markers and a
// collapsed or negative variance is flagged, as judged by core/tensor/BatchNormHealth.h. Each
// layer's icon in the list is its health from the scan (core/scan/LayerHealth, as the layer
// tree's), so that the list never disagrees with the incidents.
class BatchNormView : public QWidget
{
    Q_OBJECT
public:
    explicit BatchNormView(QWidget* parent = nullptr);

    // Shows the run `context` holds and follows it (runClosed, runLoaded, runGrew, scanChanged,
    // stepSelected), judging collapse with the floor of its scan settings.
    void follow(const RunContext* context);
    void setSeries(const std::vector<BatchNormSeries>& series);
    // A running variance at or below this has collapsed (the scan's running_var_floor), for the
    // markers and the summary; takes effect at the next setSeries.
    void setVarianceFloor(double floor) { m_varianceFloor = floor; }
    // One per series, in its order (judgeLayerHealth of the layers' names); empty: not judged yet,
    // no icons. Until the user picks a layer, the view moves to the first unhealthy one.
    void setHealth(const std::vector<LayerHealth>& health);
    void showLayer(int index);
    void setSelectedStep(int64_t step);
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    SeriesPlot* meanPlot() const { return m_mean; }
    SeriesPlot* varPlot() const { return m_var; }
    QString summary() const;

signals:
    void stepClicked(qint64 step);

private:
    QComboBox* m_layer = nullptr;
    QLabel* m_status = nullptr;
    SeriesPlot* m_mean = nullptr;
    SeriesPlot* m_var = nullptr;
    void showHealth();

    std::vector<BatchNormSeries> m_series;
    std::vector<LayerHealth> m_health;
    double m_varianceFloor = batchnorm::kCollapsedVariance;
    bool m_layerChosen = false; // the user picked a layer: no longer follow the first bad one
};

} // namespace nanscope
