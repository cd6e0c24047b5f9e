#include "OverviewView.h"

#include "SeriesPlot.h"

#include <QLabel>
#include <QSplitter>

#include <cmath>
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
    m_sourceSummary = new QLabel(this);
    m_sourceSummary->setObjectName("overview.sourceSummary");
    m_sourceSummary->setWordWrap(true);
    m_sourceSummary->setMargin(6);
    m_sourceSummary->setStyleSheet("QLabel { background: #eef3fb; color: #1d3557; border-bottom: 1px solid #c9d6ea; }");
    m_sourceSummary->hide();
    layout->addWidget(m_sourceSummary);
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
        m_plots[i]->setSeriesName(m_plots[i]->title());
        m_plots[i]->setMarkedSteps(skippedSteps, tr("skipped step"));
    }
    // Evaluation loss belongs with the training loss: the BatchNorm failure shows as their split.
    if (auto eval = scalars.find("eval_loss"); eval != scalars.end())
        plot("loss")->setOverlay(tr("eval loss"), steps, eval->second);
    else
        plot("loss")->setOverlay(QString(), {}, {});
}

void OverviewView::setEvaluation(const std::vector<int64_t>& steps, const std::vector<double>& evalLoss)
{
    SeriesPlot* loss = plot("loss");
    if (!loss->isHidden()) {
        loss->setOverlay(steps.empty() ? QString() : tr("eval loss"), steps, evalLoss);
        return;
    }
    // Evaluation alone was logged: it is what the loss plot can show.
    loss->setVisible(!steps.empty());
    loss->setSeries(steps, evalLoss);
    loss->setSeriesName(tr("eval loss"));
    loss->setOverlay(QString(), {}, {});
}

void OverviewView::setSourceSummary(const QString& summary, const QString& details)
{
    m_sourceSummary->setText(summary);
    m_sourceSummary->setToolTip(details);
    m_sourceSummary->setVisible(!summary.isEmpty());
}

QString OverviewView::sourceSummary() const
{
    return m_sourceSummary->isVisible() ? m_sourceSummary->text() : QString();
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

void OverviewView::setCheckpointSteps(const std::vector<int64_t>& steps)
{
    for (auto* p : m_plots)
        p->setCheckpointSteps(steps);
}

void OverviewView::showStepRange(double lower, double upper)
{
    for (auto* plot : m_plots)
        plot->setStepRange(lower, upper);
}

void markIncidents(SeriesPlot& plot, const std::vector<Incident>& incidents, bool labels, bool trend)
{
    plot.clearBands();
    for (const Incident& incident : incidents) {
        const double onset = double(incident.onsetStep);
        const double end = double(incidentEndStep(incident));
        const bool critical = incident.severity == Severity::Critical;
        QColor colour = critical ? QColor(220, 38, 38) : QColor(217, 119, 6);
        QString label = QString(toString(incident.kind));
        double from = onset - 0.5, to = onset + 0.5;
        if (incident.pattern == BlowupPattern::Gradual) {
            colour = QColor(234, 88, 12);
            from = onset;
            to = std::max(end, onset + 1);
            label = QObject::tr("gradual growth");
            if (incident.evidence.growthDecadesPerStep && *incident.evidence.growthDecadesPerStep > 0)
                label += QObject::tr(" (x10 every %1 steps)").arg(1.0 / *incident.evidence.growthDecadesPerStep, 0, 'f', 0);
        } else if (incident.pattern == BlowupPattern::Sudden) {
            label = QObject::tr("sudden jump");
            if (incident.evidence.jumpRatio)
                label += QString(" x%1").arg(*incident.evidence.jumpRatio, 0, 'g', 2);
        }
        plot.addBand(from, to, colour, labels ? label : QString());
        // The fitted trend: baseline times 10^(rate x steps since onset).
        if (trend && incident.pattern == BlowupPattern::Gradual && incident.evidence.growthDecadesPerStep &&
            incident.evidence.baseline && *incident.evidence.baseline > 0) {
            std::vector<double> x, y;
            for (int i = 0; i <= 50; ++i) {
                const double step = onset + (to - onset) * i / 50.0;
                x.push_back(step);
                y.push_back(*incident.evidence.baseline * std::pow(10.0, *incident.evidence.growthDecadesPerStep * (step - onset)));
            }
            plot.setTrendLine(x, y);
        }
    }
}

void OverviewView::setIncidents(const std::vector<Incident>& incidents)
{
    for (auto* p : m_plots)
        markIncidents(*p, incidents, p == m_plots.front(), p == plot("grad_norm"));
}

void OverviewView::linkRanges(SeriesPlot* source, double lower, double upper)
{
    for (auto* plot : m_plots)
        if (plot != source)
            plot->setStepRange(lower, upper);
}

void OverviewView::clear()
{
    for (SeriesPlot* plot : m_plots)
        plot->clear();
    setSourceSummary(QString(), QString());
}

} // namespace nanscope
