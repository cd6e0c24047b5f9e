#pragma once

// Plain values the views are fed with. The app reads them from core off the GUI thread.

#include "core/run/LayerHeatmap.h"
#include "core/scan/LayerHealth.h"
#include "core/replay/ReplayTrace.h"
#include "core/replay/Triage.h"
#include "core/checkpoint/CheckpointDiff.h"
#include "core/checkpoint/OptimizerStateSummary.h"
#include "core/tensor/BatchNormHealth.h"
#include "core/tensor/TensorStats.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// Scalar series logged at a rate of their own (/eval, /scalars_<name>; see runformat::
// isSeriesTableName): the table's steps and each series on them.
struct SeriesTable
{
    std::string name;
    std::vector<int64_t> steps;
    std::map<std::string, std::vector<double>> series;
};

struct BatchNormSeries
{
    std::string name;
    std::vector<int64_t> steps;
    std::vector<double> meanMin, meanMax, varMin, varMax, nonfinite;
};

// One layer's series for the detail pane.
struct LayerDetail
{
    QString layer;
    QString module; // the module whose output /activations logs
    QString error;
    std::vector<int64_t> steps;
    std::vector<double> gradNorm, paramNorm, gradNonfinite;
    std::vector<int64_t> activationSteps;
    std::vector<double> activationMin, activationMax, activationMean, activationStd, activationNan, activationInf;
};

} // namespace nanscope

namespace nanscope {

// A replay request's outcome as the replay pane and the report show it: the replay's own result
// (core's ReplayResult, read back from `nanscope replay --json`, run in a child process so that a
// model that crashes LibTorch cannot take the window down), or why there is none.
struct ReplayReport
{
    QString error;       // non-empty: the replay failed or crashed, and this says why
    QString dtype, mode; // the precision and mode it ran in
    ReplayResult result;

    int firstNonfiniteIndex() const { return result.firstNonfinite ? result.firstNonfinite->index : -1; }
};

} // namespace nanscope

namespace nanscope {

// A triage (`nanscope triage --json`) as the replay pane and the report show it.
struct TriageReport
{
    QString error; // non-empty: the triage did not run, and this says why
    TriageEvidence evidence;
    TriageVerdict verdict;
    QStringList checkpoints, batches; // per replay, the files it read ("" when there is none)
    // The incident's own replay (batch N on its checkpoint, unfiltered), for the pane's op table:
    // after a triage the ops shown are those of the step it judged.
    std::optional<ReplayReport> incidentReplay;
};

struct ReplayRequest
{
    qint64 step = -1;
    QString layerPrefix;
    QString dtype; // empty: as the run trained (the checkpoint's dtypes, the run's autocast); else a what-if
    bool eval = false;
    bool bisect = false;
};

} // namespace nanscope

namespace nanscope {

// One tensor of a checkpoint as the checkpoints pane shows it: core's statistics and update
// structs as the child programs computed them (`nanscope stats --json`, `nanscope diff --json`
// against the previous checkpoint), and the health flags `stats` judged.
struct CheckpointTensor
{
    TensorStats stats;
    std::vector<std::string> flags;
    std::optional<TensorDiff> update; // empty for the first checkpoint, or when the diff failed

    QString name() const { return QString::fromStdString(stats.name); }
    bool isBad() const { return stats.nonfinite() > 0 || !flags.empty(); }
};

// A checkpoint's optimizer state as `nanscope stats --json` reports it (an optimizer.pt, or a
// Lightning checkpoint's optimizer_states) and the checkpoints pane shows it: core's summary, the
// flags stats judged per parameter, and the model file the parameter names came from.
struct CheckpointOptimizer
{
    OptimizerStateSummary summary;
    std::vector<std::vector<std::string>> flags; // parallel to summary.parameters
    std::string namesFrom; // empty when no model file could name the parameters

    const OptimizerGroup* groupOf(const OptimizerParameterState& parameter) const
    {
        return parameter.group < summary.groups.size() ? &summary.groups[parameter.group] : nullptr;
    }
    int flaggedCount() const
    {
        int flagged = 0;
        for (const auto& parameterFlags : flags)
            flagged += !parameterFlags.empty();
        return flagged;
    }
};
} // namespace nanscope
