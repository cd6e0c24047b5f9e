#include "OverviewView.h"

#include "SeriesPlot.h"

#include <QSplitter>
#include <QVBoxLayout>

namespace nanscope {

namespace {
struct PlotSpec
{
    const char* scalar;
    const char* title;
    bool logScale;
};
// Loss and gradient norm span orders of magnitude when things go wrong: log by default.
constexpr PlotSpec kPlots[] = {
    {"loss", "loss", true},
    {"grad_norm", "grad norm", true},
    {"lr", "learning rate", false},
    {"loss_scale", "loss scale", true},
};
} // namespace

OverviewView::OverviewView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    layout->addWidget(splitter);
    for (const auto& spec : kPlots) {
        auto* plot = new SeriesPlot(tr(spec.title), splitter);
        plot->setObjectName(QString("overview.%1").arg(spec.scalar));
        plot->setLogScale(spec.logScale);
        splitter->addWidget(plot);
        m_plots << plot;
        m_scalarNames << spec.scalar;
        connect(plot, &SeriesPlot::stepRangeChanged, this,
                [this, plot](double lower, double upper) { linkRanges(plot, lower, upper); });
        connect(plot, &SeriesPlot::stepClicked, this, &OverviewView::stepClicked);
    }
}

void OverviewView::setScalars(const std::vector<int64_t>& steps,
                              const std::map<std::string, std::vector<double>>& scalars,
                              const std::vector<int64_t>& skippedSteps)
{
    for (int i = 0; i < m_plots.size(); ++i) {
        auto it = scalars.find(m_scalarNames[i].toStdString());
        const bool present = it != scalars.end();
        m_plots[i]->setVisible(present);
        if (!present)
            continue;
        m_plots[i]->setSeries(steps, it->second);
        m_plots[i]->setMarkedSteps(skippedSteps, tr("skipped step"));
    }
    // Evaluation loss belongs with the training loss: the BatchNorm failure shows as their split.
    if (auto eval = scalars.find("eval_loss"); eval != scalars.end())
        plot("loss")->setOverlay(tr("eval loss"), steps, eval->second);
    else
        plot("loss")->setOverlay(QString(), {}, {});
}

SeriesPlot* OverviewView::plot(const QString& scalar) const
{
    const int i = m_scalarNames.indexOf(scalar);
    return i < 0 ? nullptr : m_plots[i];
}

void OverviewView::setSelectedStep(int64_t step)
{
    for (auto* plot : m_plots)
        plot->setSelectedStep(step);
}

void OverviewView::showStepRange(double lower, double upper)
{
    for (auto* plot : m_plots)
        plot->setStepRange(lower, upper);
}

void OverviewView::linkRanges(SeriesPlot* source, double lower, double upper)
{
    for (auto* plot : m_plots)
        if (plot != source)
            plot->setStepRange(lower, upper);
}

} // namespace nanscope
