#pragma once

#include <QWidget>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nanscope {

class SeriesPlot;

// The stacked scalar plots (loss, grad norm, learning rate, loss scale) on one shared step axis:
// zooming or panning one moves them all.
class OverviewView : public QWidget
{
    Q_OBJECT
public:
    explicit OverviewView(QWidget* parent = nullptr);

    void setScalars(const std::vector<int64_t>& steps, const std::map<std::string, std::vector<double>>& scalars,
                    const std::vector<int64_t>& skippedSteps);
    void setSelectedStep(int64_t step);
    void showStepRange(double lower, double upper);

    SeriesPlot* plot(const QString& scalar) const;
    QList<SeriesPlot*> plots() const { return m_plots; }

signals:
    void stepClicked(qint64 step);

private:
    void linkRanges(SeriesPlot* source, double lower, double upper);

    QList<SeriesPlot*> m_plots;
    QStringList m_scalarNames;
};

} // namespace nanscope
