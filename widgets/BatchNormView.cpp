#include "BatchNormView.h"

#include "LayerTreeModel.h"
#include "RunContext.h"
#include "SeriesPlot.h"

#include "core/tensor/BatchNormHealth.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {
// NaN where the layer's buffers held any non-finite element: the finite min/max alone would
// hide that the statistics are poisoned.
std::vector<double> poisoned(const std::vector<double>& values, const std::vector<double>& nonfinite)
{
    std::vector<double> out = values;
    for (size_t i = 0; i < out.size() && i < nonfinite.size(); ++i)
        if (nonfinite[i] > 0)
            out[i] = std::nan("");
    return out;
}

batchnorm::BufferHistory historyOf(const BatchNormSeries& s, double varianceFloor)
{
    return batchnorm::judgeHistory(s.steps, s.nonfinite, s.varMin, varianceFloor);
}
} // namespace

BatchNormView::BatchNormView(QWidget* parent)
    : QWidget(parent)
    , m_layer(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_mean(new SeriesPlot(tr("running mean (min..max)"), this))
    , m_var(new SeriesPlot(tr("running variance (min..max)"), this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* header = new QHBoxLayout();
    header->setContentsMargins(6, 4, 6, 0);
    header->addWidget(new QLabel(tr("Normalisation layer:"), this));
    header->addWidget(m_layer);
    header->addSpacing(12);
    header->addWidget(m_status, 1);
    layout->addLayout(header);
    layout->addWidget(m_mean, 1);
    layout->addWidget(m_var, 1);
    m_var->setLogScale(true);
    // The main series is each step's largest value, drawn over by the smallest.
    m_mean->setSeriesName(tr("max"));
    m_var->setSeriesName(tr("max"));
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, &BatchNormView::showLayer);
    connect(m_layer, qOverload<int>(&QComboBox::activated), this, [this] { m_layerChosen = true; });
    for (auto* plot : {m_mean, m_var})
        connect(plot, &SeriesPlot::stepClicked, this, &BatchNormView::stepClicked);
    connect(m_mean, &SeriesPlot::stepRangeChanged, m_var, &SeriesPlot::setStepRange);
    connect(m_var, &SeriesPlot::stepRangeChanged, m_mean, &SeriesPlot::setStepRange);
}

void BatchNormView::follow(const RunContext* context)
{
    // The icons are the scan's judgement of each layer (as the layer tree's), once it is in.
    auto judgedHealth = [this, context] {
        if (!context->scanned())
            return std::vector<LayerHealth>{};
        std::vector<std::string> names;
        for (const BatchNormSeries& series : m_series)
            names.push_back(series.name);
        return judgeLayerHealth(names, context->scan());
    };
    auto show = [this, context, judgedHealth](const RunSnapshot& snapshot) {
        setVarianceFloor(context->scanConfig().runningVarFloor);
        setSeries(snapshot.batchNorm);
        setHealth(judgedHealth());
    };
    connect(context, &RunContext::runClosed, this, &BatchNormView::clear);
    connect(context, &RunContext::runLoaded, this, show);
    connect(context, &RunContext::runGrew, this, show);
    connect(context, &RunContext::scanChanged, this, [this, judgedHealth] { setHealth(judgedHealth()); });
    connect(context, &RunContext::stepSelected, this, [this](qint64 step) { setSelectedStep(step); });
}

void BatchNormView::setSeries(const std::vector<BatchNormSeries>& series)
{
    const QString shown = m_layer->currentText();
    m_series = series;
    m_layer->blockSignals(true);
    m_layer->clear();
    for (const auto& s : series)
        m_layer->addItem(QString::fromStdString(s.name));
    m_layer->blockSignals(false);
    if (series.empty()) {
        m_status->setText(tr("This run logged no normalisation buffers (/buffers)."));
        return;
    }
    // A run that grew keeps the layer shown; a new run opens on its first.
    const int kept = m_layer->findText(shown);
    m_layer->setCurrentIndex(kept >= 0 ? kept : 0);
    showLayer(m_layer->currentIndex());
    showHealth();
}

void BatchNormView::setHealth(const std::vector<LayerHealth>& health)
{
    m_health = health;
    showHealth();
}

void BatchNormView::showHealth()
{
    const bool judged = m_health.size() == m_series.size();
    for (int i = 0; i < m_layer->count(); ++i)
        m_layer->setItemIcon(i, judged ? LayerTreeModel::healthIcon(m_health[size_t(i)]) : QIcon());
    if (!judged || m_layerChosen)
        return;
    // Open on the first poisoned layer: that is what the user came for.
    const auto bad = std::find(m_health.begin(), m_health.end(), LayerHealth::Bad);
    if (bad != m_health.end() && int(bad - m_health.begin()) != m_layer->currentIndex())
        m_layer->setCurrentIndex(int(bad - m_health.begin()));
}

void BatchNormView::showLayer(int index)
{
    if (index < 0 || index >= int(m_series.size()))
        return;
    const BatchNormSeries& s = m_series[size_t(index)];
    m_mean->setSeries(s.steps, poisoned(s.meanMax, s.nonfinite));
    m_mean->setOverlay(tr("min"), s.steps, poisoned(s.meanMin, s.nonfinite));
    m_var->setSeries(s.steps, poisoned(s.varMax, s.nonfinite));
    m_var->setOverlay(tr("min"), s.steps, poisoned(s.varMin, s.nonfinite));
    std::vector<int64_t> collapsed;
    for (size_t i = 0; i < s.steps.size() && i < s.varMin.size(); ++i)
        if (batchnorm::judgeBuffers(0, s.varMin[i], m_varianceFloor) != batchnorm::BufferHealth::Healthy)
            collapsed.push_back(s.steps[i]);
    m_var->setMarkedSteps(collapsed, tr("collapsed variance"));
    m_status->setText(summary());
}

QString BatchNormView::summary() const
{
    const int index = m_layer->currentIndex();
    if (index < 0 || index >= int(m_series.size()))
        return QString();
    const BatchNormSeries& s = m_series[size_t(index)];
    const batchnorm::BufferHistory history = historyOf(s, m_varianceFloor);
    if (history.poisonedFrom >= 0)
        return tr("%1: running statistics non-finite from step %2 on \u2014 evaluation with this model returns NaN")
            .arg(QString::fromStdString(s.name))
            .arg(history.poisonedFrom);
    const int64_t badVarianceFrom = history.negativeFrom >= 0 ? history.negativeFrom : history.collapsedFrom;
    if (badVarianceFrom >= 0) {
        const auto it = std::lower_bound(s.steps.begin(), s.steps.end(), badVarianceFrom);
        const size_t row = size_t(it - s.steps.begin());
        return tr("%1: running variance %2 %3 at step %4")
            .arg(QString::fromStdString(s.name))
            .arg(history.negativeFrom >= 0 ? tr("negative,") : tr("collapsed to"))
            .arg(row < s.varMin.size() ? s.varMin[row] : std::nan(""))
            .arg(badVarianceFrom);
    }
    return tr("%1: running statistics finite throughout").arg(QString::fromStdString(s.name));
}

void BatchNormView::setSelectedStep(int64_t step)
{
    m_mean->setSelectedStep(step);
    m_var->setSelectedStep(step);
}

void BatchNormView::clear()
{
    m_series.clear();
    m_health.clear();
    m_layerChosen = false;
    m_layer->blockSignals(true);
    m_layer->clear();
    m_layer->blockSignals(false);
    m_status->clear();
    m_mean->clear();
    m_var->clear();
}

} // namespace nanscope
