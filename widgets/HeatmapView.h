#pragma once

#include "HeatmapScale.h"
#include "core/run/LayerHeatmap.h"

#include <QColor>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <utility>
#include <vector>

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QCPColorGradient;
class QCPColorScale;
class QCPItemStraightLine;
class QCPAbstractItem;
class QCPRange;
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
    // How values map to colours (not for counts, which have their own log scale). The default
    // clips at the 99th percentile, so that a final spike does not flatten the build-up before it.
    void setScale(HeatmapScale scale);
    HeatmapScale scale() const { return m_scaleMode; }
    // The incidents' onsets, marked as labelled lines over the map (a gradual one's build-up starts
    // there). Marks at steps outside the map are not drawn.
    void setOnsets(const std::vector<std::pair<int64_t, QString>>& onsets);
    int onsetMarkCount() const;
    // The colour range of the values shown.
    QCPRange colourRange() const;
    // The colour bar's title as drawn: empty where the bar is too short to hold it whole.
    QString scaleTitle() const;
    QString readoutText() const;
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

    void applyValues();
    void setScaleTitle(const QString& title);
    void fitScaleTitle();
    void placeOnsets();

    QComboBox* m_quantity = nullptr;
    QComboBox* m_scaleChoice = nullptr;
    HeatmapScale m_scaleMode = HeatmapScale::Percentile99;
    QString m_scaleTitle;
    std::vector<std::pair<int64_t, QString>> m_onsets;
    std::vector<QCPAbstractItem*> m_onsetItems;
    QLabel* m_readout = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemStraightLine* m_stepCursor = nullptr;
    LayerHeatmap m_heatmap;
    int m_labelledHeight = -1; // the plot height the row labels were chosen for
};

} // namespace nanscope
