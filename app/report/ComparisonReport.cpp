#include "app/report/ComparisonReport.h"

#include "app/codecs/JsonNumbers.h"

#include "core/open/CompareRunSources.h"
#include "core/open/OpenRun.h"
#include "core/run/RunFormat.h"
#include "widgets/ComparedRunsOverlay.h"
#include "widgets/SeriesPlot.h"

#include <qcustomplot.h>

#include <cmath>

namespace nanscope {

namespace {

std::string letter(size_t run)
{
    return run < 26 ? std::string(1, char('A' + run)) : "R" + std::to_string(run + 1);
}

QString runLine(const ComparedRun& run, size_t index)
{
    return QString("%1: %2 (%3, steps %4..%5, %6 incident(s))")
        .arg(text(letter(index)), text(run.label), text(run.format))
        .arg(run.scan.firstStep)
        .arg(run.scan.lastStep)
        .arg(run.scan.incidents.size());
}

QString divergenceLine(const SeriesDivergence& d, size_t other)
{
    const std::string a = letter(0), b = letter(other);
    return text(divergenceWords(d, d.leavingRun == 0 ? a : b, d.leavingRun == 0 ? b : a));
}

// The series the plot shows: the earliest divergence over every pair, else a norm or the loss.
std::string plottedSeries(const RunComparison& comparison)
{
    const SeriesDivergence* earliest = nullptr;
    for (const RunPairComparison& pair : comparison.pairs)
        if (const SeriesDivergence* first = pair.firstDivergence(); first && (!earliest || *first->step < *earliest->step))
            earliest = first;
    if (earliest)
        return earliest->series;
    for (const char* name : {runformat::scalar::kGradNorm, runformat::scalar::kLoss})
        if (comparison.runs.front().series.count(name))
            return name;
    return comparison.runs.front().series.empty() ? std::string() : comparison.runs.front().series.begin()->first;
}

} // namespace

Result<RunComparison> compareForReport(const RunSource& reportRun, const QString& label, const ScanReport& scan,
                                       const QStringList& others, const ScanConfig& scanConfig)
{
    std::vector<ComparedRun> runs(1);
    runs[0].label = label.toStdString();
    runs[0].format = reportRun.info().source.format;
    runs[0].scan = scan;
    auto series = readComparableSeries(reportRun);
    if (!series)
        return Error{series.error()};
    runs[0].series = std::move(*series);
    for (const QString& path : others) {
        auto source = openRun(path.toStdString());
        if (!source)
            return Error{"cannot open run " + path.toStdString() + " to compare with: " + source.error()};
        auto run = loadComparedRun(**source, path.toStdString(), scanConfig);
        if (!run)
            return Error{run.error()};
        runs.push_back(std::move(*run));
    }
    return compareRuns(std::move(runs));
}

QImage renderComparisonPlot(const RunComparison& comparison, QString* caption)
{
    const std::string name = plottedSeries(comparison);
    if (name.empty())
        return {};
    SeriesPlot plot(text(name));
    plot.resize(1000, 340);
    bool positive = true;
    for (const ComparedRun& run : comparison.runs)
        if (auto it = run.series.find(name); it != run.series.end())
            for (double v : it->second.values)
                positive = positive && !(std::isfinite(v) && v <= 0);
    plot.setLogScale(positive);
    const ComparedRun& reference = comparison.runs.front();
    if (auto it = reference.series.find(name); it != reference.series.end())
        plot.setSeries(it->second.steps, it->second.values);
    QCustomPlot* custom = plot.plot();
    // Only the runs are in the legend: the plot's markers explain themselves.
    for (int g = 1; g < custom->graphCount(); ++g)
        custom->graph(g)->removeFromLegend();
    custom->graph(0)->setName(ComparedRunsOverlay::runName(reference, 0));
    double lowest = custom->yAxis->range().lower, highest = custom->yAxis->range().upper;
    for (size_t i = 1; i < comparison.runs.size(); ++i) {
        auto it = comparison.runs[i].series.find(name);
        if (it == comparison.runs[i].series.end())
            continue;
        QVector<double> x, y;
        for (size_t row = 0; row < it->second.size(); ++row) {
            const double v = it->second.values[row];
            x << double(it->second.steps[row]);
            y << (std::isfinite(v) && !(positive && v <= 0) ? v : std::nan(""));
            if (std::isfinite(y.back())) {
                lowest = std::min(lowest, positive ? v / 2 : v);
                highest = std::max(highest, positive ? v * 2 : v);
            }
        }
        QCPGraph* graph = custom->addGraph();
        graph->setName(ComparedRunsOverlay::runName(comparison.runs[i], i));
        graph->setPen(QPen(ComparedRunsOverlay::runColour(i), 1));
        graph->setData(x, y, true);
    }
    custom->yAxis->setRange(lowest, highest);
    custom->xAxis->rescale();
    for (const RunPairComparison& pair : comparison.pairs)
        for (const SeriesDivergence& d : pair.series)
            if (d.series == name && d.step)
                plot.addBand(double(*d.step) - 0.5, double(*d.step) + 0.5, ComparedRunsOverlay::runColour(pair.otherRun),
                             QString("%1 leaves %2").arg(text(letter(d.leavingRun == 0 ? 0 : pair.otherRun)),
                                                         text(letter(d.leavingRun == 0 ? pair.otherRun : 0))));
    custom->legend->setVisible(true);
    custom->legend->setBrush(QColor(255, 255, 255, 200));
    custom->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    if (caption)
        *caption = QObject::tr("%1 of every run, each run's divergence from A marked").arg(text(name));
    return custom->toPixmap(1000, 320).toImage();
}

QString comparisonMarkdown(const RunComparison& comparison)
{
    QString md = "\n## Compared runs\n\n";
    for (size_t i = 0; i < comparison.runs.size(); ++i)
        md += "- " + runLine(comparison.runs[i], i) + (i == 0 ? " (this report's run)" : "") + "\n";
    for (const RunPairComparison& pair : comparison.pairs) {
        const std::string b = letter(pair.otherRun);
        const SeriesDivergence* first = pair.firstDivergence();
        md += QString("\n### %1 against A: %2\n\n")
                  .arg(text(b), first ? QString("diverges first at step %1 (%2)").arg(*first->step).arg(text(first->series))
                                      : QString("no series diverges"));
        md += "| series | steps | first departure |\n|---|---|---|\n";
        for (const SeriesDivergence& d : pair.series)
            md += QString("| %1 | %2..%3 | %4 |\n").arg(text(d.series)).arg(d.firstCommonStep).arg(d.lastCommonStep).arg(divergenceLine(d, pair.otherRun));
        md += "\nIncidents:\n\n";
        for (const IncidentDifference& d : pair.incidents)
            md += "- " + text(incidentDifferenceWords(d, letter(0), b)) + "\n";
        if (pair.incidents.empty())
            md += "- none in either run\n";
        for (const std::string& note : pair.notes)
            md += "\n> " + text(note) + "\n";
    }
    return md;
}

QString comparisonHtml(const RunComparison& comparison, const QString& image)
{
    const auto esc = [](const QString& s) { return s.toHtmlEscaped(); };
    QString h = "<h2>Compared runs</h2><ul>";
    for (size_t i = 0; i < comparison.runs.size(); ++i)
        h += QString("<li style='color:%1'>%2</li>")
                 .arg(ComparedRunsOverlay::runColour(i).name(), esc(runLine(comparison.runs[i], i) + (i == 0 ? " (this report's run)" : "")));
    h += "</ul>" + image;
    for (const RunPairComparison& pair : comparison.pairs) {
        const std::string b = letter(pair.otherRun);
        const SeriesDivergence* first = pair.firstDivergence();
        h += QString("<h3>%1 against A: %2</h3>")
                 .arg(text(b), first ? QString("diverges first at step %1 (%2)").arg(*first->step).arg(esc(text(first->series)))
                                     : QString("no series diverges"));
        h += "<table><tr><th>series</th><th>steps</th><th>first departure</th></tr>";
        for (const SeriesDivergence& d : pair.series)
            h += QString("<tr><td>%1</td><td>%2..%3</td><td>%4</td></tr>")
                     .arg(esc(text(d.series))).arg(d.firstCommonStep).arg(d.lastCommonStep).arg(esc(divergenceLine(d, pair.otherRun)));
        h += "</table><p><b>Incidents</b></p><ul>";
        for (const IncidentDifference& d : pair.incidents)
            h += "<li>" + esc(text(incidentDifferenceWords(d, letter(0), b))) + "</li>";
        if (pair.incidents.empty())
            h += "<li>none in either run</li>";
        h += "</ul>";
        for (const std::string& note : pair.notes)
            h += "<p><i>" + esc(text(note)) + "</i></p>";
    }
    return h;
}

} // namespace nanscope
