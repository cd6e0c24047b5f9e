#pragma once

// The incident report's parts, inside app/ (writeIncidentReport in IncidentReport.h is the
// entry point): what the report says, gathered once (IncidentReportGather.cpp: the scan, the
// plots, each critical incident's replay and triage), and its formats (IncidentReportFormats.cpp:
// JSON, Markdown, HTML; the PDF prints the HTML).

#include "app/report/IncidentReport.h"

#include "core/compare/RunComparison.h"
#include "core/run/RunSource.h"
#include "core/scan/Incident.h"
#include "core/replay/ReplayOptions.h"
#include "widgets/ViewData.h"

#include <QByteArray>
#include <QImage>
#include <QString>

#include <functional>
#include <optional>
#include <vector>

namespace nanscope::report {

struct Plot
{
    QString name; // resource name, e.g. "timeline.png"
    QString caption;
    QImage image;
};

struct BatchNormState
{
    QString layer;
    qint64 nonfiniteFrom = -1; // first step with non-finite running stats
    qint64 collapsedAt = -1;   // first step with a collapsed or negative running variance (BatchNormHealth.h)
};

struct IncidentSection
{
    Incident incident;
    int plotIndex = -1;
    bool replayed = false;
    qint64 replayStep = -1;
    ReplayReport replay;
    bool triaged = false; // the first critical incident's replayed step only: a triage is up to seven replays
    TriageReport triage;
};

// Everything the report says, gathered once and written in the chosen format.
struct ReportContent
{
    QString runName, directory, generated;
    RunInfo info;
    ScanReport scan;
    qint64 steps = 0, firstStep = 0, lastStep = 0;
    std::vector<BatchNormState> batchNorm;
    std::vector<IncidentSection> critical;
    std::vector<Plot> plots;
    std::optional<RunComparison> comparison; // --compare: this run against others
    int comparisonPlotIndex = -1;
    QString nanscopeVersion = NANSCOPE_VERSION;
    QString libtorch = QString::fromStdString(libtorchVersion());
};

// Reads the run, scans it, renders the plots and replays (and triages) its critical incidents.
Result<ReportContent> gather(const QString& runDirectory, const IncidentReportOptions& options,
                             const ProgressCallback& progress);

QByteArray toJsonReport(const ReportContent& c);
QString toMarkdown(const ReportContent& c);
// `imageSource` maps a plot to what <img src> holds: a data: URL (HTML) or a resource name (PDF).
QString toHtml(const ReportContent& c, const std::function<QString(const Plot&)>& imageSource, int imageWidth);
QString pngDataUrl(const QImage& image);

} // namespace nanscope::report
