#pragma once

#include "widgets/ViewData.h"
#include "core/Progress.h"
#include "core/Result.h"
#include "core/scan/ScanConfig.h"

#include <QString>
#include <QStringList>

namespace nanscope {

struct IncidentReportOptions
{
    // Replay each critical incident's step when a checkpoint and a batch exist for it. Replay
    // runs the checkpoint's TorchScript in a child process (`program replay --json`).
    bool replay = true;
    QString program; // the nanscope executable; default: this program
    // Other runs to compare the report's run with: a section with where they diverge and how
    // their incidents differ (docs/compare.md).
    QStringList compareWith;
    // A multi-rank run: replay and triage on this rank's saved steps (-1: each incident's own
    // rank, the rank it was found on).
    int rank = -1;
    // The settings the run is scanned and its BatchNorm buffers judged with (`--config FILE`).
    ScanConfig scanConfig;
    // Replays already run of this run's steps, as trained and in training mode (the window's
    // replay pane, `--replayed FILE`): a critical incident at one of their steps uses it instead of
    // replaying again.
    std::vector<ReplayReport> replayed;
};

// Writes the incident report of a run: a run summary, an incident timeline, and for each
// critical incident its pattern with evidence and a plot, the first bad layer, the BatchNorm
// state, the replay result, the probable cause and the fixes; then the environment. The format
// follows the extension: .html (self-contained, plots embedded), .pdf, .md or .json. The file is
// written atomically: a complete report or none. Needs a QApplication (plots are rendered).
Status writeIncidentReport(const QString& runDirectory, const QString& outputPath,
                           const IncidentReportOptions& options = {}, const ProgressCallback& progress = {});

} // namespace nanscope
