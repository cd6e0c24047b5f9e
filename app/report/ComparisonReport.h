#pragma once

// The comparison section of the incident report (`nanscope report RUN --compare OTHER`): the
// report's run against each other run, as a divergence table, the incident differences and one
// plot with every run's series overlaid. Kept apart from IncidentReport.cpp, which only places it.

#include "core/compare/RunComparison.h"
#include "core/scan/ScanConfig.h"

#include <QImage>
#include <QString>
#include <QStringList>

namespace nanscope {

class RunSource;

// The report's run (already open and scanned with `scanConfig`) against `others`, each opened here
// and scanned with the same settings. An error names the run that cannot be opened.
Result<RunComparison> compareForReport(const RunSource& reportRun, const QString& label, const ScanReport& scan,
                                       const QStringList& others, const ScanConfig& scanConfig);

// Every run's series that diverged first (else the gradient norm, else the loss) on one plot, one
// colour per run, each divergence step marked. A null image when no series is shared.
QImage renderComparisonPlot(const RunComparison& comparison, QString* caption);

QString comparisonMarkdown(const RunComparison& comparison);
// `image`: the <img> element of the plot ("" for none).
QString comparisonHtml(const RunComparison& comparison, const QString& image);

} // namespace nanscope
