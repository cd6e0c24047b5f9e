// The Overview's added plots: the Series menu lists every logged series that has no plot yet, and
// a plot added from it (or taken back) keeps the overview's bands, smoothing and linked zoom.
#include "OverviewView.h"

#include "SeriesPlot.h"
#include "core/run/RunFormat.h"

#include <qcustomplot.h>

#include <QAction>
#include <QMenu>

#include <algorithm>

namespace nanscope {

namespace {

// "eval/eval_accuracy" -> {"eval", "eval_accuracy"}; a /scalars key has no table part.
std::pair<std::string, std::string> splitKey(const QString& key)
{
    const int slash = key.indexOf('/');
    if (slash < 0)
        return {runformat::kScalars, key.toStdString()};
    return {key.left(slash).toStdString(), key.mid(slash + 1).toStdString()};
}

QString seriesKey(const std::string& table, const std::string& name)
{
    return table == runformat::kScalars ? QString::fromStdString(name)
                                        : QString::fromStdString(table + "/" + name);
}

// The title of an added plot: the series' name, and its table's when it is not /scalars.
QString seriesTitle(const QString& key)
{
    const auto [table, name] = splitKey(key);
    return table == runformat::kScalars ? QString::fromStdString(name)
                                        : QString("%1 (%2)").arg(QString::fromStdString(name), QString::fromStdString(table));
}

} // namespace

void OverviewView::showAddedSeries(SeriesPlot* plot, const QString& key)
{
    const auto [tableName, name] = splitKey(key);
    const std::vector<int64_t>* steps = nullptr;
    const std::vector<double>* values = nullptr;
    if (tableName == runformat::kScalars) {
        if (auto it = m_scalars.find(name); it != m_scalars.end()) {
            steps = &m_steps;
            values = &it->second;
        }
    } else {
        for (const SeriesTable& table : m_seriesTables)
            if (table.name == tableName)
                if (auto it = table.series.find(name); it != table.series.end()) {
                    steps = &table.steps;
                    values = &it->second;
                }
    }
    plot->setVisible(values != nullptr);
    if (!values) {
        plot->clear();
        return;
    }
    plot->setSeries(*steps, *values);
    // Skipped steps belong to the training steps, not to an evaluation's.
    plot->setMarkedSteps(steps == &m_steps ? m_skippedSteps : std::vector<int64_t>{}, tr("skipped step"));
}

QStringList OverviewView::addableSeries() const
{
    QStringList keys;
    for (const auto& [name, values] : m_scalars)
        if (!m_keys.mid(0, m_fixedPlotCount).contains(QString::fromStdString(name)))
            keys << seriesKey(runformat::kScalars, name);
    for (const SeriesTable& table : m_seriesTables)
        for (const auto& [name, values] : table.series)
            keys << seriesKey(table.name, name);
    return keys;
}

SeriesPlot* OverviewView::addSeriesPlot(const QString& key)
{
    if (SeriesPlot* shown = plot(key))
        return shown;
    if (!addableSeries().contains(key))
        return nullptr;
    SeriesPlot* added = createPlot(key, seriesTitle(key));
    showAddedSeries(added, key);
    // It joins the others as they are: their steps in view, the selected step, the incidents.
    markIncidents(*added, m_incidents, false, evidenceSeriesOf(key));
    added->setCheckpointSteps(m_checkpointSteps);
    if (m_selectedStep)
        added->setSelectedStep(*m_selectedStep);
    for (int i = 0; i < m_plots.size() - 1; ++i)
        if (!m_plots[i]->isHidden()) {
            const QCPRange range = m_plots[i]->plot()->xAxis->range();
            added->setStepRange(range.lower, range.upper);
            break;
        }
    emit plotAdded(added);
    return added;
}

void OverviewView::removeSeriesPlot(const QString& key)
{
    const int i = m_keys.indexOf(key);
    if (i < m_fixedPlotCount)
        return; // the fixed plots are not the menu's to remove
    SeriesPlot* removed = m_plots.takeAt(i);
    m_keys.removeAt(i);
    removed->deleteLater();
    removed->hide();
}

void OverviewView::populateSeriesMenu()
{
    QMenu* menu = m_seriesButton->menu();
    menu->clear();
    const QStringList keys = addableSeries();
    if (keys.isEmpty()) {
        menu->addAction(tr("No other series logged"))->setEnabled(false);
        return;
    }
    // One section per table: series logged at each step, then each other logging rate.
    QString section;
    for (const QString& key : keys) {
        const auto [table, name] = splitKey(key);
        const QString tableName = QString::fromStdString(table);
        if (tableName != section) {
            section = tableName;
            menu->addSection(table == runformat::kScalars ? tr("Every step") : tr("Table %1").arg(tableName));
        }
        QAction* action = menu->addAction(QString::fromStdString(name));
        action->setCheckable(true);
        action->setChecked(plot(key) != nullptr);
        connect(action, &QAction::toggled, this, [this, key](bool show) {
            if (show)
                addSeriesPlot(key);
            else
                removeSeriesPlot(key);
        });
    }
}

} // namespace nanscope
