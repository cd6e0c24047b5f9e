#include "LayerDetailView.h"
#include "core/run/MeasuredCell.h"

#include "RunContext.h"
#include "SeriesPlot.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QVBoxLayout>

#include <cmath>

namespace nanscope {

namespace {
std::vector<double> sum(const std::vector<double>& a, const std::vector<double>& b, double sign)
{
    std::vector<double> out(std::min(a.size(), b.size()));
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = a[i] + sign * b[i];
    return out;
}

void addBandGraphs(QCustomPlot* plot, const std::vector<int64_t>& steps, const std::vector<double>& low,
                   const std::vector<double>& high, QColor colour, const QString& name)
{
    QVector<double> x, lo, hi;
    for (size_t i = 0; i < std::min({steps.size(), low.size(), high.size()}); ++i) {
        if (!std::isfinite(low[i]) || !std::isfinite(high[i]))
            continue;
        x << double(steps[i]);
        lo << low[i];
        hi << high[i];
    }
    QCPGraph* bottom = plot->addGraph();
    bottom->setName(QString()); // only the band's edge: QCustomPlot would name it "Graph N" in the legend
    bottom->setPen(Qt::NoPen);
    bottom->removeFromLegend();
    bottom->setData(x, lo, true);
    QCPGraph* top = plot->addGraph();
    top->setName(name);
    top->setPen(QPen(colour.darker(120), 1));
    colour.setAlpha(70);
    top->setBrush(colour);
    top->setChannelFillGraph(bottom);
    top->setData(x, hi, true);
}
} // namespace

LayerDetailView::LayerDetailView(QWidget* parent)
    : QWidget(parent)
    , m_title(new QLabel(tr("Select a layer in the tree or the heatmap."), this))
    , m_gradient(new SeriesPlot(tr("grad norm"), this))
    , m_activation(new SeriesPlot(tr("activation range"), this))
    , m_nonfinite(new SeriesPlot(tr("NaN / Inf count"), this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_title->setContentsMargins(6, 4, 6, 4);
    m_title->setTextFormat(Qt::RichText);
    layout->addWidget(m_title);
    layout->addWidget(m_gradient, 2);
    layout->addWidget(m_activation, 2);
    layout->addWidget(m_nonfinite, 1);
    m_gradient->setLogScale(true);
    for (auto* plot : {m_gradient, m_activation, m_nonfinite})
        connect(plot, &SeriesPlot::stepClicked, this, &LayerDetailView::stepClicked);
    for (auto* plot : {m_gradient, m_activation, m_nonfinite})
        connect(plot, &SeriesPlot::stepRangeChanged, this, [this, plot](double lower, double upper) {
            for (auto* other : {m_gradient, m_activation, m_nonfinite})
                if (other != plot)
                    other->setStepRange(lower, upper);
            if (m_stepRange) // the user's own zoom is what the next layer keeps, not the incident's
                m_stepRange = std::pair{lower, upper};
        });
}

void LayerDetailView::setDetail(const LayerDetail& detail)
{
    m_detail = detail;
    if (!detail.error.isEmpty()) {
        m_title->setText(QString("<span style='color:#b00020'>%1</span>").arg(detail.error.toHtmlEscaped()));
        return;
    }
    m_title->setText(QString("<b>%1</b>%2")
                         .arg(detail.layer.toHtmlEscaped())
                         .arg(detail.module.isEmpty() ? QString()
                                                      : tr("  \u2014 activations of module <b>%1</b>").arg(detail.module.toHtmlEscaped())));
    m_gradient->setSeries(detail.steps, detail.gradNorm);
    m_gradient->setOverlay(detail.paramNorm.empty() ? QString() : tr("param norm"),
                           detail.paramNorm.empty() ? std::vector<int64_t>() : detail.steps, detail.paramNorm);

    // Mean as the line, min..max and mean +- std as bands around it.
    QCustomPlot* activation = m_activation->plot();
    while (activation->graphCount() > m_activation->ownGraphCount()) // drop the earlier bands
        activation->removeGraph(activation->graphCount() - 1);
    // A step where the module did not run (an expert no token went to) measured no element: NaN
    // figures with zero counts are no point of the line, not a NaN mark.
    std::vector<int64_t> measuredSteps;
    std::vector<double> measuredMean;
    for (size_t i = 0; i < detail.activationSteps.size() && i < detail.activationMean.size(); ++i) {
        const double nan = i < detail.activationNan.size() ? detail.activationNan[i] : 0.0;
        const double inf = i < detail.activationInf.size() ? detail.activationInf[i] : 0.0;
        if (noElementMeasured(detail.activationMean[i], nan, inf))
            continue;
        measuredSteps.push_back(detail.activationSteps[i]);
        measuredMean.push_back(detail.activationMean[i]);
    }
    m_activation->setSeries(measuredSteps, measuredMean);
    addBandGraphs(activation, detail.activationSteps, detail.activationMin, detail.activationMax, QColor(100, 149, 237),
                  tr("min..max"));
    addBandGraphs(activation, detail.activationSteps, sum(detail.activationMean, detail.activationStd, -1),
                  sum(detail.activationMean, detail.activationStd, +1), QColor(37, 99, 235), tr("mean \u00b1 std"));
    activation->rescaleAxes();
    activation->yAxis2->setRange(0, 1);
    activation->replot(QCustomPlot::rpQueuedReplot);

    std::vector<double> counts = detail.activationNan;
    for (size_t i = 0; i < counts.size() && i < detail.activationInf.size(); ++i)
        counts[i] += detail.activationInf[i];
    m_nonfinite->setCounts(true);
    m_nonfinite->setSeries(detail.activationSteps, counts);
    m_nonfinite->setOverlay(detail.gradNonfinite.empty() ? QString() : tr("non-finite gradient elements"),
                            detail.gradNonfinite.empty() ? std::vector<int64_t>() : detail.steps, detail.gradNonfinite);
    // A new layer's data zooms out to all of it; the incident being looked at stays in view.
    if (m_stepRange)
        for (auto* plot : {m_gradient, m_activation, m_nonfinite})
            plot->setStepRange(m_stepRange->first, m_stepRange->second);
}

void LayerDetailView::showStepRange(double lower, double upper)
{
    m_stepRange = std::pair{lower, upper};
    for (auto* plot : {m_gradient, m_activation, m_nonfinite})
        plot->setStepRange(lower, upper);
}

void LayerDetailView::resetZoom()
{
    m_stepRange.reset();
    for (auto* plot : {m_gradient, m_activation, m_nonfinite})
        plot->resetZoom();
}

void LayerDetailView::setSelectedStep(int64_t step)
{
    for (auto* plot : {m_gradient, m_activation, m_nonfinite})
        plot->setSelectedStep(step);
}

void LayerDetailView::clear()
{
    m_detail = LayerDetail();
    m_stepRange.reset();
    m_title->setText(tr("Select a layer in the tree or the heatmap."));
    // The range bands are graphs of their own: left behind, the previous run's activation range
    // stayed on screen under a run that logs none (a Trainer or Lightning log).
    QCustomPlot* activation = m_activation->plot();
    while (activation->graphCount() > m_activation->ownGraphCount())
        activation->removeGraph(activation->graphCount() - 1);
    for (SeriesPlot* plot : {m_gradient, m_activation, m_nonfinite})
        plot->clear();
}

void LayerDetailView::follow(const RunContext* context)
{
    connect(context, &RunContext::runClosed, this, &LayerDetailView::clear);
    connect(context, &RunContext::stepSelected, this, [this](qint64 step) { setSelectedStep(step); });
}

} // namespace nanscope
