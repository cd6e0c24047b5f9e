#pragma once

#include "ViewData.h"

#include <QWidget>

#include <optional>
#include <utility>

class QLabel;

namespace nanscope {

class RunContext;

class SeriesPlot;

// The selected layer: gradient and parameter norms, its module's activation range (min/max
// band with mean +- std), and NaN/Inf counts.
class LayerDetailView : public QWidget
{
    Q_OBJECT
public:
    explicit LayerDetailView(QWidget* parent = nullptr);

    void setDetail(const LayerDetail& detail);
    // Follows the run `context` holds (runClosed, stepSelected); a layer's series are read off the
    // GUI thread and handed over by setDetail.
    void follow(const RunContext* context);
    void setSelectedStep(int64_t step);
    // Zooms the three linked plots to a span of steps (the selected incident's), now and for
    // every layer shown after (following the user's zoom from there), until clear().
    void showStepRange(double lower, double upper);
    // Every step again, for this layer and the next (the Overview's Reset zoom).
    void resetZoom();
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    const LayerDetail& detail() const { return m_detail; }
    SeriesPlot* gradientPlot() const { return m_gradient; }
    SeriesPlot* activationPlot() const { return m_activation; }
    SeriesPlot* nonfinitePlot() const { return m_nonfinite; }

signals:
    void stepClicked(qint64 step);

private:
    QLabel* m_title = nullptr;
    SeriesPlot* m_gradient = nullptr;
    SeriesPlot* m_activation = nullptr;
    SeriesPlot* m_nonfinite = nullptr;
    LayerDetail m_detail;
    std::optional<std::pair<double, double>> m_stepRange;
};

} // namespace nanscope
