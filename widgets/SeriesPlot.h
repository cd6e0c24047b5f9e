#pragma once

#include <QWidget>

#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;

namespace nanscope {

// One step-indexed series on a QCustomPlot. Non-finite values are data, so they are drawn, never
// dropped: NaN, +Inf and -Inf each get their own marker pinned to the plot edge.
class SeriesPlot : public QWidget
{
    Q_OBJECT
public:
    explicit SeriesPlot(const QString& title, QWidget* parent = nullptr);

    void setSeries(const std::vector<int64_t>& steps, const std::vector<double>& values);
    void setLogScale(bool logScale);
    bool logScale() const { return m_logScale; }
    void setSelectedStep(int64_t step);

    int nanCount() const { return m_nanCount; }
    int posInfCount() const { return m_posInfCount; }
    int negInfCount() const { return m_negInfCount; }
    QCustomPlot* plot() const { return m_plot; }

signals:
    void stepClicked(qint64 step);

private:
    void rescale();

    QCustomPlot* m_plot = nullptr;
    QCPGraph* m_values = nullptr;
    QCPGraph* m_nanMarkers = nullptr;
    QCPGraph* m_posInfMarkers = nullptr;
    QCPGraph* m_negInfMarkers = nullptr;
    QCPItemStraightLine* m_stepCursor = nullptr;
    bool m_logScale = false;
    int m_nanCount = 0;
    int m_posInfCount = 0;
    int m_negInfCount = 0;
};

} // namespace nanscope
