#include "OverviewView.h"

#include "RunContext.h"
#include "SeriesPlot.h"
#include "Smoothing.h"
#include "core/run/EvalLoss.h"
#include "core/run/RunFormat.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>

namespace nanscope {

QString OverviewView::evidenceSeriesOf(const QString& key)
{
    return QString::fromStdString(runformat::scalarSeries(key.toStdString()));
}

namespace {
// The key of the plot that shows a blow-up's precursor (not a scalar: no run logs it by this name).
const QString kPrecursorKey = QStringLiteral("incident precursor");
struct PlotSpec
{
    const char* scalar;
    const char* title;
    bool logScale;
};
// Loss and gradient norm span orders of magnitude when things go wrong: log by default.
constexpr PlotSpec kPlots[] = {
    {runformat::scalar::kLoss, "loss", true},
    {runformat::scalar::kGradNorm, "grad norm", true},
    {"lr", "learning rate", false},
    {"loss_scale", "loss scale", true},
};
constexpr char kEvalLoss[] = "eval_loss";
constexpr int kSmoothingSteps = 100; // slider positions per unit of weight

} // namespace

OverviewView::OverviewView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_sourceSummary = new QLabel(this);
    m_sourceSummary->setObjectName("overview.sourceSummary");
    m_sourceSummary->setWordWrap(true);
    m_sourceSummary->setMargin(6);
    m_sourceSummary->setStyleSheet("QLabel { background: #eef3fb; color: #1d3557; border-bottom: 1px solid #c9d6ea; }");
    m_sourceSummary->hide();
    layout->addWidget(m_sourceSummary);

    auto* toolbar = new QHBoxLayout();
    toolbar->setContentsMargins(6, 3, 6, 3);
    m_seriesButton = new QToolButton(this);
    m_seriesButton->setObjectName("overview.series");
    m_seriesButton->setText(tr("Series\u2026"));
    m_seriesButton->setToolTip(tr("Add a plot of any logged series"));
    m_seriesButton->setPopupMode(QToolButton::InstantPopup);
    m_seriesButton->setMenu(new QMenu(m_seriesButton));
    connect(m_seriesButton->menu(), &QMenu::aboutToShow, this, &OverviewView::populateSeriesMenu);
    // An instant-popup tool button draws its menu arrow over its text and leaves it out of its size
    // hint: "Series…" was clipped to "Seri". Room for both.
    m_seriesButton->setMinimumWidth(fontMetrics().horizontalAdvance(m_seriesButton->text())
                                    + style()->pixelMetric(QStyle::PM_MenuButtonIndicator, nullptr, m_seriesButton) + 16);
    toolbar->addWidget(m_seriesButton);
    auto* resetZoomButton = new QToolButton(this);
    resetZoomButton->setText(tr("Reset zoom"));
    connect(resetZoomButton, &QToolButton::clicked, this, &OverviewView::resetZoom);
    toolbar->addWidget(resetZoomButton);
    toolbar->addSpacing(16);
    toolbar->addWidget(new QLabel(tr("Smoothing"), this));
    m_smoothingSlider = new QSlider(Qt::Horizontal, this);
    m_smoothingSlider->setObjectName("overview.smoothing");
    m_smoothingSlider->setRange(0, int(std::lround(kMaxSmoothingWeight * kSmoothingSteps)));
    m_smoothingSlider->setMaximumWidth(180);
    m_smoothingSlider->setToolTip(tr("Exponential moving average, as TensorBoard smooths; "
                                     "the raw series stays faint behind, and NaN/Inf stay marked"));
    toolbar->addWidget(m_smoothingSlider);
    m_smoothingValue = new QLabel("0.00", this);
    m_smoothingValue->setMinimumWidth(QFontMetrics(font()).horizontalAdvance("0.00") + 4);
    toolbar->addWidget(m_smoothingValue);
    toolbar->addSpacing(16);
    toolbar->addWidget(new QLabel(tr("X axis"), this));
    m_axisChoice = new QComboBox(this);
    m_axisChoice->setObjectName("overview.xAxis");
    for (StepAxisKind kind : {StepAxisKind::Step, StepAxisKind::WallTime, StepAxisKind::Epoch}) {
        QString name = QString::fromUtf8(stepAxisName(kind));
        name[0] = name[0].toUpper();
        m_axisChoice->addItem(name, int(kind));
    }
    connect(m_axisChoice, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { setStepAxisKind(StepAxisKind(m_axisChoice->itemData(index).toInt())); });
    toolbar->addWidget(m_axisChoice);
    toolbar->addStretch(1);
    layout->addLayout(toolbar);
    connect(m_smoothingSlider, &QSlider::valueChanged, this,
            [this](int position) { setSmoothing(double(position) / kSmoothingSteps); });

    // In a scroll area: every added plot keeps a readable height, and many of them scroll
    // instead of squeezing the fixed four.
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    m_splitter = new QSplitter(Qt::Vertical, scroll);
    m_splitter->setChildrenCollapsible(false);
    scroll->setWidget(m_splitter);
    layout->addWidget(scroll, 1);
    for (const auto& spec : kPlots) {
        SeriesPlot* plot = createPlot(spec.scalar, tr(spec.title));
        plot->setLogScale(spec.logScale);
    }
    // The precursor's plot sits right under the loss, hidden until an incident has one.
    SeriesPlot* precursor = createPlot(kPrecursorKey, tr("Precursor"));
    precursor->setLogScale(true);
    precursor->setVisible(false);
    m_splitter->insertWidget(m_splitter->indexOf(plot(runformat::scalar::kLoss)) + 1, precursor);
    m_fixedPlotCount = m_plots.size();
    updateAxisChoice();
}

SeriesPlot* OverviewView::createPlot(const QString& key, const QString& title)
{
    auto* plot = new SeriesPlot(title, m_splitter);
    plot->setObjectName(QString("overview.%1").arg(key));
    plot->setSmoothing(smoothing());
    plot->setStepAxis(shownStepAxis());
    m_splitter->addWidget(plot);
    m_plots << plot;
    m_keys << key;
    connect(plot, &SeriesPlot::stepRangeChanged, this,
            [this, plot](double lower, double upper) { linkRanges(plot, lower, upper); });
    connect(plot, &SeriesPlot::stepClicked, this, &OverviewView::stepClicked);
    connect(plot, &SeriesPlot::hovered, this, [this, plot](double step) {
        for (SeriesPlot* other : std::as_const(m_plots))
            if (other != plot)
                other->showReadoutAt(step);
    });
    return plot;
}

void OverviewView::setScalars(const std::vector<int64_t>& steps,
                              const std::map<std::string, std::vector<double>>& scalars,
                              const std::vector<int64_t>& skippedSteps)
{
    m_steps = steps;
    m_scalars = scalars;
    m_skippedSteps = skippedSteps;
    for (int i = 0; i < m_fixedPlotCount; ++i) {
        if (m_keys[i] == kPrecursorKey)
            continue; // the incident shown decides it, not the scalars
        auto it = scalars.find(m_keys[i].toStdString());
        const bool present = it != scalars.end();
        m_plots[i]->setVisible(present);
        if (!present)
            continue;
        m_plots[i]->setSeries(steps, it->second);
        m_plots[i]->setSeriesName(m_plots[i]->title());
        m_plots[i]->setMarkedSteps(skippedSteps, tr("skipped step"));
    }
    for (int i = m_fixedPlotCount; i < m_plots.size(); ++i)
        showAddedSeries(m_plots[i], m_keys[i]);
    showFixedSeriesOfOwnRate();
    showEvaluationLoss();
}

void OverviewView::setSeriesTables(const std::vector<SeriesTable>& tables)
{
    m_seriesTables = tables;
    for (int i = m_fixedPlotCount; i < m_plots.size(); ++i)
        showAddedSeries(m_plots[i], m_keys[i]);
    showFixedSeriesOfOwnRate();
    showEvaluationLoss();
}

void OverviewView::showFixedSeriesOfOwnRate()
{
    // A standard series logged at a rate of its own (DeepSpeed prints the learning rate every 10
    // steps: /scalars_lr) is plotted by default all the same, on its own steps.
    for (int i = 0; i < m_fixedPlotCount; ++i) {
        const std::string key = m_keys[i].toStdString();
        if (m_scalars.count(key) || key == runformat::scalar::kLoss)
            continue;
        for (const SeriesTable& table : m_seriesTables) {
            const auto series = table.series.find(key);
            if (series == table.series.end() || table.steps.empty())
                continue;
            m_plots[i]->setVisible(true);
            m_plots[i]->setSeries(table.steps, series->second);
            m_plots[i]->setSeriesName(m_plots[i]->title());
            m_plots[i]->setMarkedSteps(m_skippedSteps, tr("skipped step"));
            break;
        }
    }
}

void OverviewView::showEvaluationLoss()
{
    SeriesPlot* loss = plot(runformat::scalar::kLoss);
    // Evaluation loss belongs with the training loss: the BatchNorm failure shows as their split.
    if (auto eval = m_scalars.find(kEvalLoss); eval != m_scalars.end()) {
        loss->setOverlay(tr("eval loss"), m_steps, eval->second);
        return;
    }
    const SeriesTable* evalTable = nullptr;
    for (const SeriesTable& table : m_seriesTables)
        if (runformat::isEvalLossTable(table.name, false, table.series.count(kEvalLoss))) {
            evalTable = &table;
            break;
        }
    if (!evalTable) {
        loss->setOverlay(QString(), {}, {});
        return;
    }
    const std::vector<double>& evalLoss = evalTable->series.at(kEvalLoss);
    if (m_scalars.count(runformat::scalar::kLoss)) {
        loss->setOverlay(tr("eval loss"), evalTable->steps, evalLoss);
        return;
    }
    // Evaluation alone was logged: it is what the loss plot can show.
    loss->setVisible(!evalTable->steps.empty());
    loss->setSeries(evalTable->steps, evalLoss);
    loss->setSeriesName(tr("eval loss"));
    loss->setOverlay(QString(), {}, {});
}

void OverviewView::setStepAxes(const StepAxes& axes)
{
    m_wallTimeAxis = axes.wallTime ? std::make_shared<const StepAxis>(*axes.wallTime) : nullptr;
    m_epochAxis = axes.epoch ? std::make_shared<const StepAxis>(*axes.epoch) : nullptr;
    // The user's choice stays: a run that lacks its axis shows steps, the next run that logs it
    // shows it again.
    updateAxisChoice();
    for (SeriesPlot* plot : std::as_const(m_plots))
        plot->setStepAxis(shownStepAxis());
}

bool OverviewView::hasStepAxis(StepAxisKind kind) const
{
    return kind == StepAxisKind::Step || (kind == StepAxisKind::WallTime && m_wallTimeAxis)
        || (kind == StepAxisKind::Epoch && m_epochAxis);
}

bool OverviewView::setStepAxisKind(StepAxisKind kind)
{
    m_stepAxisKind = kind;
    updateAxisChoice();
    for (SeriesPlot* plot : std::as_const(m_plots))
        plot->setStepAxis(shownStepAxis());
    return hasStepAxis(kind);
}

std::shared_ptr<const StepAxis> OverviewView::shownStepAxis() const
{
    switch (m_stepAxisKind) {
    case StepAxisKind::WallTime:
        return m_wallTimeAxis;
    case StepAxisKind::Epoch:
        return m_epochAxis;
    case StepAxisKind::Step:
        break;
    }
    return nullptr;
}

void OverviewView::updateAxisChoice()
{
    auto* model = qobject_cast<QStandardItemModel*>(m_axisChoice->model());
    for (int i = 0; i < m_axisChoice->count(); ++i) {
        const auto kind = StepAxisKind(m_axisChoice->itemData(i).toInt());
        const bool logged = hasStepAxis(kind);
        if (QStandardItem* item = model ? model->item(i) : nullptr) {
            item->setEnabled(logged);
            item->setToolTip(logged ? QString()
                                    : tr("This run does not log %1 (a \"%2\" series)")
                                          .arg(QString::fromUtf8(stepAxisName(kind)),
                                               QString::fromUtf8(kind == StepAxisKind::WallTime ? runformat::kWallTime
                                                                                               : runformat::kEpoch)));
        }
        if (kind == stepAxisKind())
            m_axisChoice->setCurrentIndex(i);
    }
    m_axisChoice->setToolTip(tr("Label the step axis in steps, wall time since the first step, or epochs, "
                                "where the run logs them; the plots stay aligned by step"));
}

void OverviewView::setSmoothing(double weight)
{
    weight = std::clamp(weight, 0.0, kMaxSmoothingWeight);
    const int position = int(std::lround(weight * kSmoothingSteps));
    if (m_smoothingSlider->value() != position) {
        m_smoothingSlider->setValue(position); // comes back here through valueChanged
        return;
    }
    m_smoothingValue->setText(QString::number(weight, 'f', 2));
    for (SeriesPlot* plot : std::as_const(m_plots))
        plot->setSmoothing(weight);
}

double OverviewView::smoothing() const
{
    return double(m_smoothingSlider->value()) / kSmoothingSteps;
}

void OverviewView::showReadoutAt(double step)
{
    for (SeriesPlot* plot : std::as_const(m_plots))
        plot->showReadoutAt(step);
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

SeriesPlot* OverviewView::precursorPlot() const
{
    return plot(kPrecursorKey);
}

SeriesPlot* OverviewView::plot(const QString& key) const
{
    const int i = m_keys.indexOf(key);
    return i < 0 ? nullptr : m_plots[i];
}

void OverviewView::setSelectedStep(int64_t step)
{
    m_selectedStep = step;
    for (auto* plot : std::as_const(m_plots))
        plot->setSelectedStep(step);
}

void OverviewView::setCheckpointSteps(const std::vector<int64_t>& steps)
{
    m_checkpointSteps = steps;
    for (auto* p : std::as_const(m_plots))
        p->setCheckpointSteps(steps);
}

void OverviewView::showStepRange(double lower, double upper)
{
    for (auto* plot : std::as_const(m_plots))
        plot->setStepRange(lower, upper);
}

void OverviewView::resetZoom()
{
    // Each plot fits its own values; the shared step axis then spans every plot's steps (an
    // evaluation table may start later or end earlier than the training steps).
    std::optional<QCPRange> steps;
    for (SeriesPlot* plot : std::as_const(m_plots)) {
        if (plot->isHidden())
            continue;
        plot->resetZoom();
        const QCPRange range = plot->plot()->xAxis->range();
        steps = steps ? QCPRange(std::min(steps->lower, range.lower), std::max(steps->upper, range.upper)) : range;
    }
    if (steps)
        showStepRange(steps->lower, steps->upper);
    emit zoomReset();
}

// The value at `onset` of the line 10^(rate x (step - onset)) through a plot's positive finite
// points in [onset, end]: the median of their intercepts. Nothing with fewer than three points.
static std::optional<double> trendIntercept(const SeriesPlot& plot, double onset, double end, double rate)
{
    std::vector<double> intercepts;
    const std::vector<int64_t>& steps = plot.steps();
    const std::vector<double>& values = plot.values();
    for (size_t i = 0; i < steps.size() && i < values.size(); ++i) {
        const double step = double(steps[i]);
        if (step >= onset && step <= end && std::isfinite(values[i]) && values[i] > 0)
            intercepts.push_back(std::log10(values[i]) - rate * (step - onset));
    }
    if (intercepts.size() < 3)
        return std::nullopt;
    auto middle = intercepts.begin() + std::ptrdiff_t(intercepts.size() / 2);
    std::nth_element(intercepts.begin(), middle, intercepts.end());
    return std::pow(10.0, *middle);
}

void markIncidents(SeriesPlot& plot, const std::vector<Incident>& incidents, bool labels, const QString& shownSeries)
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
            // Measured on a quantity inside the model (its precursor), not on a scalar: say which,
            // so that the loss plot's label does not read as the loss's growth.
            const QString series = QString::fromStdString(incident.evidence.series);
            const bool inside = !series.startsWith(QLatin1String("scalars"));
            label = inside ? QObject::tr("gradual growth of %1").arg(series.section('/', -1)) : QObject::tr("gradual growth");
            if (incident.evidence.growthDecadesPerStep && *incident.evidence.growthDecadesPerStep > 0)
                label += QObject::tr(" (x10 every %1 steps)").arg(1.0 / *incident.evidence.growthDecadesPerStep, 0, 'f', 0);
        } else if (incident.pattern == BlowupPattern::Sudden) {
            label = QObject::tr("sudden jump");
            if (incident.evidence.jumpRatio)
                label += QString(" x%1").arg(*incident.evidence.jumpRatio, 0, 'g', 2);
        }
        plot.addBand(from, to, colour, labels ? label : QString());
        // The fitted trend: 10^(rate x steps since onset), through the points it was fitted on (the
        // median intercept, as Theil-Sen's slope is the median one); from the baseline only when the
        // plot holds too few of them. A climb that jumped first and then crept (a log-variance head
        // right after its loss switched) lies above a line drawn from its baseline.
        const bool measuredHere = !shownSeries.isEmpty() && QString::fromStdString(incident.evidence.series) == shownSeries;
        if (measuredHere && incident.pattern == BlowupPattern::Gradual && incident.evidence.growthDecadesPerStep &&
            incident.evidence.baseline && *incident.evidence.baseline > 0) {
            const double rate = *incident.evidence.growthDecadesPerStep;
            double anchor = *incident.evidence.baseline;
            if (const std::optional<double> intercept = trendIntercept(plot, onset, to, rate))
                anchor = *intercept;
            std::vector<double> x, y;
            for (int i = 0; i <= 50; ++i) {
                const double step = onset + (to - onset) * i / 50.0;
                x.push_back(step);
                y.push_back(anchor * std::pow(10.0, rate * (step - onset)));
            }
            plot.setTrendLine(x, y);
        }
    }
}

void OverviewView::setIncidents(const std::vector<Incident>& incidents)
{
    m_incidents = incidents;
    for (auto* p : std::as_const(m_plots))
        markIncidents(*p, incidents, p == m_plots.front(), evidenceSeriesOf(m_keys[m_plots.indexOf(p)]));
}

void OverviewView::linkRanges(SeriesPlot* source, double lower, double upper)
{
    for (auto* plot : std::as_const(m_plots))
        if (plot != source)
            plot->setStepRange(lower, upper);
}

void OverviewView::follow(const RunContext* context)
{
    // A run that grew keeps the user's zoom and selection: only the data moves on.
    auto show = [this](const RunSnapshot& snapshot) {
        setScalars(snapshot.steps, snapshot.scalars, snapshot.skippedSteps);
        setSeriesTables(snapshot.seriesTables);
        setStepAxes(snapshot.stepAxes);
        setTimelineEvents(snapshot.timelineEvents);
        setSourceSummary(QString::fromStdString(nanscope::sourceSummary(snapshot.info)),
                         QString::fromStdString(nanscope::sourceDetails(snapshot.info)));
        setCheckpointSteps(snapshot.checkpointSteps());
    };
    connect(context, &RunContext::runClosed, this, &OverviewView::clear);
    connect(context, &RunContext::runLoaded, this, show);
    connect(context, &RunContext::runGrew, this, show);
    connect(context, &RunContext::scanChanged, this, [this](const ScanReport& scan) { setIncidents(scan.incidents); });
    connect(context, &RunContext::stepSelected, this, [this](qint64 step) { setSelectedStep(step); });
}

void OverviewView::clear()
{
    m_steps.clear();
    m_scalars.clear();
    m_skippedSteps.clear();
    m_seriesTables.clear();
    m_incidents.clear();
    m_checkpointSteps.clear();
    m_selectedStep.reset();
    setStepAxes(StepAxes{});
    for (SeriesPlot* plot : std::as_const(m_plots))
        plot->clear();
    plot(kPrecursorKey)->setVisible(false);
    if (m_lossEvents)
        m_lossEvents->clear();
    setSourceSummary(QString(), QString());
}

void OverviewView::showPrecursor(const QString& title, const QString& evidenceSeries,
                                 const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    SeriesPlot* precursor = plot(kPrecursorKey);
    if (title.isEmpty() || values.empty()) {
        precursor->clear();
        precursor->setVisible(false);
        return;
    }
    precursor->setSeries(steps, values);
    precursor->setSeriesName(title);
    markIncidents(*precursor, m_incidents, false, evidenceSeries); // its fitted growth too
    precursor->setCheckpointSteps(m_checkpointSteps);
    if (m_selectedStep)
        precursor->setSelectedStep(*m_selectedStep);
    for (SeriesPlot* other : std::as_const(m_plots))
        if (other != precursor && !other->isHidden()) {
            const QCPRange range = other->plot()->xAxis->range();
            precursor->setStepRange(range.lower, range.upper);
            break;
        }
    precursor->setVisible(true);
}

void OverviewView::setTimelineEvents(const std::vector<TimelineEvent>& events)
{
    if (!m_lossEvents && events.empty())
        return;
    if (!m_lossEvents)
        m_lossEvents = new EventMarkers(plot(runformat::scalar::kLoss));
    m_lossEvents->setEvents(events);
}

} // namespace nanscope
