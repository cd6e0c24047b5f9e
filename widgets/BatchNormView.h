#pragma once

#include "ViewData.h"

#include <QWidget>

class QComboBox;
class QLabel;

namespace nanscope {

class SeriesPlot;

// Running mean and variance ranges of each normalisation layer over steps. These are buffers,
// not parameters, so gradient checks never see them go bad: here NaN shows as markers and a
// collapsed or negative variance is flagged, as judged by core/tensor/BatchNormHealth.h.
class BatchNormView : public QWidget
{
    Q_OBJECT
public:
    explicit BatchNormView(QWidget* parent = nullptr);

    void setSeries(const std::vector<BatchNormSeries>& series);
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
    std::vector<BatchNormSeries> m_series;
};

} // namespace nanscope
