#pragma once

// Plain values the views are fed with. The app reads them from core off the GUI thread.

#include "core/run/LayerHeatmap.h"
#include "core/scan/LayerHealth.h"
#include "core/checkpoint/CheckpointDiff.h"
#include "core/tensor/BatchNormHealth.h"
#include "core/tensor/TensorStats.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

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

// A replay as the replay pane shows it (parsed from `nanscope replay --json`, run in a child
// process so that a model that crashes LibTorch cannot take the window down).
struct ReplayValue
{
    bool defined = false;
    QString shape; // as shapeText writes it: "[4, 8]"
    QString dtype;
    qint64 numel = 0;
    double min = 0, max = 0, mean = 0, std = 0, absmax = 0; // NaN when no element is finite
    qint64 nan = 0, posinf = 0, neginf = 0;
    bool finite() const { return nan == 0 && posinf == 0 && neginf == 0; }
};

struct ReplayOpRow
{
    int index = 0;
    QString op, module, source, gradFunction;
    QString code; // the text of the source line
    std::vector<ReplayValue> inputs;
    ReplayValue output, grad;
};

struct ReplayReport
{
    QString error; // non-empty: the replay failed or crashed, and this says why
    qint64 step = -1;
    double loss = 0;
    QString lossName, dtype, mode;
    std::vector<ReplayOpRow> ops;
    int firstNonfinite = -1;     // op index, or -1
    ReplayOpRow culprit;         // with inputs
    bool hasBackwardCulprit = false;
    ReplayOpRow backwardCulprit;
    bool bisected = false;
    std::vector<qint64> badSamples;
    QStringList notes;
};

} // namespace nanscope

namespace nanscope {

struct ReplayRequest
{
    qint64 step = -1;
    QString layerPrefix;
    QString dtype = "float32";
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
} // namespace nanscope
