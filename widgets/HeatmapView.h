#pragma once

#include "core/run/LayerHeatmap.h"

#include <QColor>
#include <QWidget>

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QCPColorGradient;
class QCPColorScale;
class QCPItemStraightLine;
class QLabel;

namespace nanscope {

class RunContext;

// Layer x step heatmap. Rows are layers in model order (input at the top), so a blow-up that
// travels through the depth of the model reads as a diagonal front. Non-finite cells are magenta.
class HeatmapView : public QWidget
{
    Q_OBJECT
public:
    explicit HeatmapView(QWidget* parent = nullptr);

    void setHeatmap(const LayerHeatmap& heatmap);
    const LayerHeatmap& heatmap() const { return m_heatmap; }
    // Follows the run `context` holds (runClosed, stepSelected); the heatmap itself is computed
    // off the GUI thread and handed over by setHeatmap.
    void follow(const RunContext* context);
    void setSelectedStep(int64_t step);
    // Drops everything of the run shown (RunContext::runClosed).
    void clear();
    HeatmapQuantity quantity() const;
    // The colour scale's title for a quantity.
    static QString scaleLabel(HeatmapQuantity quantity);
    QCustomPlot* plot() const { return m_plot; }
    int nonfiniteCells() const;
    // What a non-finite cell is painted in, and the value scale it must stand apart from.
    QColor nonfiniteColour() const;
    QCPColorGradient gradient() const;
    // The thermal scale of norms and magnitudes (NaN in green), and the background-to-red scale of
    // non-finite counts.
    static QCPColorGradient valueGradient();
    static QCPColorGradient countGradient();

signals:
    void quantityRequested(int quantity);
    void layerClicked(const QString& name);
    void stepClicked(qint64 step);

private:
    void updateRowLabels();

    QComboBox* m_quantity = nullptr;
    QLabel* m_readout = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemStraightLine* m_stepCursor = nullptr;
    LayerHeatmap m_heatmap;
    int m_labelledHeight = -1; // the plot height the row labels were chosen for
};

} // namespace nanscope
