#include "HeatmapView.h"

#include "RunContext.h"

#include "core/NumberText.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {
const QColor kNonfiniteColour(0, 200, 90);
} // namespace

HeatmapView::HeatmapView(QWidget* parent)
    : QWidget(parent)
    , m_quantity(new QComboBox(this))
    , m_scaleChoice(new QComboBox(this))
    , m_readout(new QLabel(this))
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* header = new QHBoxLayout();
    header->setContentsMargins(6, 4, 6, 0);
    header->addWidget(new QLabel(tr("Show:"), this));
    m_quantity->addItem(tr("log10 gradient norm"), int(HeatmapQuantity::GradNormLog10));
    m_quantity->addItem(tr("log10 activation |max|"), int(HeatmapQuantity::ActivationAbsMax));
    m_quantity->addItem(tr("non-finite count"), int(HeatmapQuantity::NonfiniteCount));
    m_quantity->addItem(tr("log10 parameter norm"), int(HeatmapQuantity::ParamNormLog10));
    header->addWidget(m_quantity);
    header->addSpacing(8);
    header->addWidget(new QLabel(tr("Colours:"), this));
    m_scaleChoice->addItem(tr("up to the 99th percentile"), int(HeatmapScale::Percentile99));
    m_scaleChoice->addItem(tr("each layer its own range"), int(HeatmapScale::PerLayer));
    m_scaleChoice->addItem(tr("the whole range"), int(HeatmapScale::WholeRange));
    m_scaleChoice->setToolTip(tr("Over the whole range a final spike takes every colour and the growth before it looks "
                                 "flat; clipped at the 99th percentile, or per layer, the build-up shows"));
    header->addWidget(m_scaleChoice);
    header->addSpacing(12);
    header->addWidget(m_readout, 1);
    auto* swatch = new QLabel(QString("<span style='color:%1'>\u25A0</span> %2").arg(kNonfiniteColour.name(), tr("non-finite")), this);
    swatch->setToolTip(tr("Cells holding NaN or Inf at any step of their bin"));
    header->addWidget(swatch);
    layout->addLayout(header);
    layout->addWidget(m_plot, 1);

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    m_map->setGradient(valueGradient());
    m_map->setInterpolate(false);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setRangeReversed(true);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    // A resized plot (the dock dragged taller) labels as many rows as now fit.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        fitScaleTitle();
        if (!m_heatmap.rows.empty() && m_plot->axisRect()->height() != m_labelledHeight) {
            updateRowLabels();
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        }
    });
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_stepCursor = new QCPItemStraightLine(m_plot);
    m_stepCursor->setPen(QPen(QColor(0, 200, 255, 140), 1, Qt::DashLine)); // thin: a one-step NaN column must stay visible under it
    m_stepCursor->setVisible(false);

    connect(m_quantity, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { emit quantityRequested(m_quantity->itemData(index).toInt()); });
    connect(m_scaleChoice, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { setScale(HeatmapScale(m_scaleChoice->itemData(index).toInt())); });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        double step = 0, row = 0;
        m_map->pixelsToCoords(event->position(), step, row);
        const int r = int(std::lround(row));
        if (r < 0 || r >= int(m_heatmap.rows.size()) || m_heatmap.bins() == 0)
            return;
        int cellX = 0, cellY = 0;
        m_map->data()->coordToCell(step, row, &cellX, &cellY);
        if (m_heatmap.bins() == 1 && cellX == 1) // drawn as two equal cells (setHeatmap)
            cellX = 0;
        if (cellX < 0 || cellX >= int(m_heatmap.bins()))
            return;
        const float v = m_heatmap.at(size_t(r), size_t(cellX));
        m_readout->setText(QString("%1   steps %2\u2013%3   %4")
                               .arg(QString::fromStdString(m_heatmap.rows[size_t(r)]))
                               .arg(m_heatmap.binFirstStep[size_t(cellX)])
                               .arg(m_heatmap.binLastStep[size_t(cellX)])
                               .arg(std::isnan(v) ? QString("non-finite") : QString::fromStdString(numberText(v, 4))));
    });
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        double step = 0, row = 0;
        m_map->pixelsToCoords(event->position(), step, row);
        const int r = int(std::lround(row));
        if (r >= 0 && r < int(m_heatmap.rows.size()))
            emit layerClicked(QString::fromStdString(m_heatmap.rows[size_t(r)]));
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        emit stepClicked(qint64(std::llround(m_plot->xAxis->pixelToCoord(event->position().x()))));
    });
}

QCPColorGradient HeatmapView::valueGradient()
{
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    // Green is no colour of the thermal scale (black, purple, red, yellow, white): a NaN cell must
    // never read as a value. The header carries its swatch, since the scale cannot show it.
    gradient.setNanColor(kNonfiniteColour);
    return gradient;
}

QCPColorGradient HeatmapView::countGradient()
{
    // Counts of non-finite values: none is a quiet background, and any at all is orange to dark
    // red. On the thermal scale a fully NaN bias (32 values) was near-black beside a weight's 1024
    // in white, and a run where every cell had gone non-finite read as a blank white map.
    QCPColorGradient gradient;
    gradient.setColorInterpolation(QCPColorGradient::ciRGB);
    gradient.setColorStopAt(0.0, QColor(238, 242, 247));
    gradient.setColorStopAt(0.02, QColor(251, 191, 36));
    gradient.setColorStopAt(0.4, QColor(234, 88, 12));
    gradient.setColorStopAt(0.75, QColor(200, 30, 30));
    gradient.setColorStopAt(1.0, QColor(110, 15, 15));
    gradient.setLevelCount(500);
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(kNonfiniteColour);
    return gradient;
}

HeatmapQuantity HeatmapView::quantity() const
{
    return m_heatmap.quantity;
}

int HeatmapView::nonfiniteCells() const
{
    int n = 0;
    for (uint8_t f : m_heatmap.nonfinite)
        n += f;
    return n;
}

QString HeatmapView::scaleLabel(HeatmapQuantity quantity)
{
    switch (quantity) {
    case HeatmapQuantity::GradNormLog10: return tr("log10 grad norm");
    case HeatmapQuantity::ActivationAbsMax: return tr("log10 |activation|");
    case HeatmapQuantity::NonfiniteCount: return tr("non-finite count");
    case HeatmapQuantity::ParamNormLog10: return tr("log10 parameter norm");
    }
    return QString();
}

void HeatmapView::setHeatmap(const LayerHeatmap& heatmap)
{
    m_heatmap = heatmap;
    m_readout->clear(); // it names a value of the quantity shown before
    m_quantity->setCurrentIndex(m_quantity->findData(int(heatmap.quantity)));
    const int bins = int(heatmap.bins());
    const int rows = int(heatmap.rows.size());
    if (bins == 0 || rows == 0) {
        m_map->data()->clear();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const double first = double(heatmap.binFirstStep.front());
    const double last = double(heatmap.binLastStep.back());
    // QCustomPlot spans cells between the first and last cell centres: a single row or bin has no
    // height or width and is not drawn (a one-layer model, a run of one bin). Such a dimension is
    // drawn as two equal cells a half apart, which cover the same span.
    const double stepSpan = std::max(last, first + 1) - first;
    const int dataBins = std::max(bins, 2), dataRows = std::max(rows, 2);
    m_map->data()->setSize(dataBins, dataRows);
    m_map->data()->setRange(bins > 1 ? QCPRange(first, first + stepSpan) : QCPRange(first + stepSpan / 4, first + 3 * stepSpan / 4),
                            rows > 1 ? QCPRange(0, rows - 1) : QCPRange(-0.25, 0.25));
    applyValues();
    updateRowLabels();
    m_plot->xAxis->setRange(first, std::max(last, first + 1));
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    placeOnsets();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::setScale(HeatmapScale scale)
{
    m_scaleMode = scale;
    m_scaleChoice->setCurrentIndex(m_scaleChoice->findData(int(scale)));
    if (m_heatmap.bins() > 0 && !m_heatmap.rows.empty()) {
        applyValues();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void HeatmapView::setScaleTitle(const QString& title)
{
    m_scaleTitle = title;
    fitScaleTitle();
}

void HeatmapView::fitScaleTitle()
{
    // The title runs along the colour bar: on a short plot (the Ranks dock) it was cut to "og10
    // grad norm". Then it gives way to the header's quantity, which names the same.
    const int room = m_plot->axisRect()->height(); // the bar spans the map (their margins are grouped)
    const int needed = QFontMetrics(m_scale->axis()->labelFont()).horizontalAdvance(m_scaleTitle) + 8;
    const QString shown = needed <= room ? m_scaleTitle : QString();
    if (m_scale->axis()->label() != shown)
        m_scale->axis()->setLabel(shown);
}

QString HeatmapView::readoutText() const
{
    return m_readout->text();
}

QString HeatmapView::scaleTitle() const
{
    return m_scale->axis()->label();
}

QCPRange HeatmapView::colourRange() const
{
    return m_map->dataRange();
}

void HeatmapView::applyValues()
{
    const LayerHeatmap& heatmap = m_heatmap;
    const int bins = int(heatmap.bins());
    const int rows = int(heatmap.rows.size());
    const int dataBins = std::max(bins, 2), dataRows = std::max(rows, 2);
    // Counts span 1 to millions (a bias against a weight): coloured by log10(1 + count), ticked in
    // counts. The readout still says the count itself.
    const bool counts = heatmap.quantity == HeatmapQuantity::NonfiniteCount;
    m_scaleChoice->setEnabled(!counts);
    const ScaledHeatmap scaled = counts ? ScaledHeatmap{} : scaleHeatmap(heatmap.values, size_t(rows), size_t(bins), m_scaleMode);
    double largest = 0;
    for (int r = 0; r < dataRows; ++r)
        for (int b = 0; b < dataBins; ++b) {
            const size_t cell = size_t(std::min(r, rows - 1)) * size_t(bins) + size_t(std::min(b, bins - 1));
            const double v = heatmap.values[cell];
            if (counts && std::isfinite(v))
                largest = std::max(largest, v);
            m_map->data()->setCell(b, r, counts ? (std::isfinite(v) ? std::log10(1 + std::max(v, 0.0)) : v) : scaled.values[cell]);
        }
    m_map->setGradient(counts ? countGradient() : valueGradient());
    if (counts) {
        m_map->setDataRange(QCPRange(0, std::max(std::log10(1 + largest), std::log10(2.0))));
        QSharedPointer<QCPAxisTickerText> countTicks(new QCPAxisTickerText);
        for (double count = 0; count <= std::max(largest, 1.0); count = count == 0 ? 1 : count * 10)
            countTicks->addTick(std::log10(1 + count), QString::number(count, 'f', 0));
        m_scale->axis()->setTicker(countTicks);
        setScaleTitle(scaleLabel(heatmap.quantity));
        return;
    }
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_map->setDataRange(QCPRange(scaled.lower, scaled.upper));
    const QString label = scaleLabel(heatmap.quantity);
    // Short: the title runs along the bar (the Colours choice in the header says the rest).
    setScaleTitle(m_scaleMode == HeatmapScale::PerLayer       ? tr("%1, per layer").arg(label)
                  : m_scaleMode == HeatmapScale::Percentile99 ? tr("%1, to p99").arg(label)
                                                              : label);
}

void HeatmapView::setOnsets(const std::vector<std::pair<int64_t, QString>>& onsets)
{
    m_onsets = onsets;
    placeOnsets();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int HeatmapView::onsetMarkCount() const
{
    return int(m_onsetItems.size()) / 2;
}

void HeatmapView::placeOnsets()
{
    for (QCPAbstractItem* item : m_onsetItems)
        m_plot->removeItem(item);
    m_onsetItems.clear();
    if (m_heatmap.bins() == 0)
        return;
    const double first = double(m_heatmap.binFirstStep.front()), last = double(m_heatmap.binLastStep.back());
    for (const auto& [step, label] : m_onsets) {
        if (double(step) < first || double(step) > last)
            continue; // outside the data: not drawn
        auto* line = new QCPItemStraightLine(m_plot);
        line->setPen(QPen(QColor(255, 255, 255, 200), 1.5, Qt::DashLine));
        line->point1->setCoords(double(step), 0);
        line->point2->setCoords(double(step), 1);
        line->setSelectable(false);
        auto* text = new QCPItemText(m_plot);
        text->setText(label);
        text->setColor(Qt::white);
        text->setBrush(QColor(0, 0, 0, 150));
        text->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(double(step), 0.01);
        text->setSelectable(false);
        m_onsetItems.push_back(line);
        m_onsetItems.push_back(text);
    }
}

// Names the rows as far as their labels fit the plot's height, one text line each: every row,
// else every n-th (the readout names the row under the cursor). 64 ranks in the Ranks dock had
// drawn 64 labels over each other into a black bar. Again whenever the plot's height changes.
void HeatmapView::updateRowLabels()
{
    const int rows = int(m_heatmap.rows.size());
    const int height = m_plot->axisRect()->height() > 0 ? m_plot->axisRect()->height() : m_plot->height();
    m_labelledHeight = height;
    const int line = std::max(1, QFontMetrics(m_plot->yAxis->tickLabelFont()).height());
    const int fitting = std::max(1, height / line);
    const int every = std::max({1, rows / 40, (rows + fitting - 1) / fitting});
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int r = 0; r < rows; r += every)
        ticker->addTick(r, QString::fromStdString(m_heatmap.rows[size_t(r)]));
    m_plot->yAxis->setTicker(ticker);
}

void HeatmapView::setSelectedStep(int64_t step)
{
    m_stepCursor->point1->setCoords(double(step), 0);
    m_stepCursor->point2->setCoords(double(step), 1);
    m_stepCursor->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::clear()
{
    m_heatmap = LayerHeatmap();
    m_onsets.clear();
    placeOnsets();
    m_map->data()->clear();
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
    m_readout->clear();
    m_stepCursor->setVisible(false);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QColor HeatmapView::nonfiniteColour() const
{
    return m_map->gradient().nanColor();
}

QCPColorGradient HeatmapView::gradient() const
{
    return m_map->gradient();
}

void HeatmapView::follow(const RunContext* context)
{
    connect(context, &RunContext::runClosed, this, &HeatmapView::clear);
    connect(context, &RunContext::stepSelected, this, [this](qint64 step) { setSelectedStep(step); });
    // Where each incident that matters begins: a gradual one's build-up starts at its onset.
    connect(context, &RunContext::scanChanged, this, [this](const ScanReport& scan) {
        std::vector<std::pair<int64_t, QString>> onsets;
        for (const Incident& incident : scan.incidents) {
            if (incident.severity == Severity::Info)
                continue;
            QString label = QString::fromUtf8(toString(incident.kind));
            if (incident.pattern)
                label += QString(" (%1)").arg(QString::fromUtf8(toString(*incident.pattern)));
            onsets.emplace_back(incident.onsetStep, label);
        }
        setOnsets(onsets);
    });
}

} // namespace nanscope
