#include "app/cli/CliSupport.h"
#include "app/cli/Subcommands.h"
#include "app/codecs/CheckpointJson.h"
#include "app/codecs/JsonNumbers.h"
#include "app/codecs/OptimizerJson.h"

#include "core/NumberText.h"
#include "core/checkpoint/CheckpointReader.h"
#include "core/importers/OptimizerState.h"
#include "core/tensor/TensorStats.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <optional>

namespace nanscope::cli {

namespace {

// A table's header line: each title at its column's width (negative: left-aligned), one space
// apart, and two spaces before the last column (the flags, as long as they need).
QString headerLine(std::initializer_list<std::pair<const char*, int>> columns, const char* last)
{
    QString line;
    for (const auto& [title, width] : columns)
        line += QString("%1 ").arg(QString::fromLatin1(title), width);
    return line + " " + last + "\n";
}

QString figure(const std::optional<double>& value)
{
    return value ? fromStd(numberText(*value, 4)) : QString("-");
}

// What a torch.save file holds of an optimizer, told from its tensor names (collectTensors joins
// the key path): a bare optimizer.state_dict() has only "state.<index>.<moment>" tensors (and
// "param_groups..." where torch keeps lr as a tensor); a Lightning checkpoint keeps its optimizers
// under "optimizer_states.<k>" next to its "state_dict".
enum class OptimizerHolding { None, OptimizerStateOnly, BesideModel };

OptimizerHolding optimizerHolding(const Checkpoint& checkpoint)
{
    const auto& tensors = checkpoint.tensors;
    if (checkpoint.format != CheckpointFormat::StateDict || tensors.empty())
        return OptimizerHolding::None;
    const auto startsWith = [](const std::string& name, const char* prefix) { return name.rfind(prefix, 0) == 0; };
    if (std::all_of(tensors.begin(), tensors.end(), [&](const NamedTensor& t) {
            return startsWith(t.name, "state.") || startsWith(t.name, "param_groups.");
        }))
        return OptimizerHolding::OptimizerStateOnly;
    if (std::any_of(tensors.begin(), tensors.end(),
                    [&](const NamedTensor& t) { return startsWith(t.name, "optimizer_states."); }))
        return OptimizerHolding::BesideModel;
    return OptimizerHolding::None;
}

// Reads the optimizer state of `path` and judges each parameter. `model` names the parameters;
// what it says about failing to find them is kept only when the names stayed unmapped.
Result<CheckpointOptimizer> readCheckpointOptimizer(const std::string& path, const ModelParametersFound& model)
{
    auto summary = readOptimizerState(path, model.parameters);
    if (!summary)
        return Error{summary.error()};
    CheckpointOptimizer optimizer;
    optimizer.summary = std::move(*summary);
    if (optimizer.summary.namesMapped)
        optimizer.namesFrom = model.source;
    else
        optimizer.summary.notes.insert(optimizer.summary.notes.begin(), model.notes.begin(), model.notes.end());
    for (const OptimizerParameterState& parameter : optimizer.summary.parameters) {
        const OptimizerGroup* group = optimizer.groupOf(parameter);
        optimizer.flags.push_back(group ? optimizerFlags(parameter, *group) : std::vector<std::string>{});
    }
    return optimizer;
}

QString percentFigure(const std::optional<double>& share)
{
    return share ? QString::number(*share * 100, 'f', 1) + "%" : QString("-");
}

QString groupFigures(const OptimizerGroup& group)
{
    const QString betas = group.beta1 || group.beta2 ? figure(group.beta1) + ", " + figure(group.beta2) : QString("-");
    return QString("%1 %2 %3 %4")
        .arg(figure(group.lr), -10)
        .arg(figure(group.eps), -10)
        .arg(betas, -14)
        .arg(figure(group.weightDecay), -12);
}

void printOptimizer(const CheckpointOptimizer& optimizer)
{
    const OptimizerStateSummary& summary = optimizer.summary;
    out() << fromStd(summary.path) << "  ("
          << (summary.isAdam ? "Adam-family optimizer state" : "optimizer state, not Adam-family") << ", "
          << summary.parameters.size() << " parameters in " << summary.groups.size() << " param group(s); "
          << (summary.namesMapped ? "names from "
                                        + (optimizer.namesFrom == summary.path ? QString("its state_dict")
                                                                               : fromStd(optimizer.namesFrom))
                                  : QString("named by the optimizer's index and shape, see the notes"))
          << ")\n\n";

    out() << QString("%1 %2 %3 %4 %5 %6\n")
                 .arg("group", -6)
                 .arg("lr", -10)
                 .arg("eps", -10)
                 .arg("betas", -14)
                 .arg("weight decay", -12)
                 .arg("parameters");
    for (size_t g = 0; g < summary.groups.size(); ++g)
        out() << QString("%1 %2 %3\n")
                     .arg(g, -6)
                     .arg(groupFigures(summary.groups[g]))
                     .arg(summary.groups[g].parameterIndices.size());
    out() << "\n";

    int nameWidth = 9;
    for (const auto& p : summary.parameters)
        nameWidth = std::max(nameWidth, int(p.name.size()));
    nameWidth = std::min(nameWidth, 48);
    const QString row("%1 %2 %3 %4 %5 %6 %7 %8 %9  %10\n");
    out() << headerLine({ { "parameter", -nameWidth }, { "shape", -14 }, { "step", 7 }, { "update RMS", 10 },
                          { "update/lr", 9 }, { "eps-dom", 7 }, { "exp_avg RMS", 11 }, { "sqrt(v) RMS", 11 },
                          { "nonfinite", 9 } },
                        "flags");
    int flagged = 0;
    for (size_t i = 0; i < summary.parameters.size(); ++i) {
        const OptimizerParameterState& p = summary.parameters[i];
        const OptimizerGroup* group = optimizer.groupOf(p);
        QStringList flags;
        for (const std::string& flag : optimizer.flags[i])
            flags << fromStd(flag);
        flagged += !flags.isEmpty();
        out() << row.arg(fromStd(p.name), -nameWidth)
                     .arg(p.hasState ? fromStd(shapeText(p.shape)) : QString("-"), -14)
                     .arg(p.step ? QString::number(*p.step, 'f', 0) : QString("-"), 7)
                     .arg(figure(p.updateRms), 10)
                     .arg(group ? figure(updateToLearningRate(p, *group)) : QString("-"), 9)
                     .arg(percentFigure(p.epsilonDominatedShare), 7)
                     .arg(figure(p.expAvgRms), 11)
                     .arg(figure(p.expAvgSqRootRms), 11)
                     .arg(p.nonfinite, 9)
                     .arg(p.hasState ? flags.join("; ") : QString("no state yet"));
    }
    out() << "\n" << (flagged ? QString("%1 parameter(s) flagged").arg(flagged) : QString("no flags")) << "\n";
    for (const std::string& warning : summary.warnings)
        out() << "warning: " << fromStd(warning) << "\n";
    for (const std::string& note : summary.notes)
        out() << "note: " << fromStd(note) << "\n";
    if (!summary.namesMapped)
        out() << "note: --names-from MODEL names the parameters from a model file or checkpoint folder\n";
}

void addStatsOptions(QCommandLineParser& parser)
{
    parser.setApplicationDescription(
        "Tensor health of a checkpoint: torch.save state_dicts and training checkpoints, TorchScript archives and "
        "safetensors files, read without running anything from the file.\n"
        "An optimizer state (a Hugging Face checkpoint's optimizer.pt) gives a table per parameter instead: Adam's "
        "update size against lr, the share of elements where eps dominates, the moments and their NaN/Inf. A "
        "Lightning checkpoint holding optimizer_states gives both.");
    parser.addPositionalArgument("FILE", "The checkpoint file, or an optimizer.pt.");
    parser.addOption({"json", "Print JSON instead of a table."});
    parser.addOption({"device", "Where to compute: auto (CUDA for tensors saved from CUDA when available), cpu or cuda.",
                      "DEVICE", "auto"});
    parser.addOption({"histogram", "Also count the finite values of each tensor into BINS bins over [min, max].", "BINS"});
    parser.addOption({"spectral-norm", "Also estimate the spectral norm of 2-D (and flattened N-D) weights."});
    parser.addOption({"norm-threshold", "Flag tensors whose L2 norm exceeds this (default 1e6).", "VALUE", "1e6"});
    parser.addOption({"optimizer", "Show only the optimizer state (of a Lightning checkpoint: its optimizer_states)."});
    parser.addOption({"names-from",
                      "Name the optimizer's parameters from this model file or checkpoint folder (default: FILE's own "
                      "state_dict, or the pytorch_model.bin or adapter next to an optimizer.pt).",
                      "MODEL"});
}

// `nanscope stats`'s table of tensors: one line each, with their health flags.
void printTensorTable(const std::string& path, const std::string& format, const std::vector<TensorStats>& stats,
                      const HealthThresholds& thresholds)
{
    int nameWidth = 6;
    for (const auto& s : stats)
        nameWidth = std::max(nameWidth, int(s.name.size()));
    nameWidth = std::min(nameWidth, 48);
    out() << fromStd(path) << "  (" << fromStd(format) << ", " << stats.size()
          << " tensors)\n\n";
    out() << headerLine({ { "tensor", -nameWidth }, { "shape", -14 }, { "dtype", -8 }, { "min", 10 }, { "max", 10 },
                          { "mean", 10 }, { "std", 10 }, { "norm", 10 }, { "nan", 6 }, { "inf", 6 } },
                        "flags");
    int flagged = 0;
    for (const auto& s : stats) {
        QStringList flags;
        for (const auto& flag : healthFlags(s, thresholds))
            flags << fromStd(flag);
        if (!flags.isEmpty())
            ++flagged;
        out() << QString("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10  %11\n")
                     .arg(fromStd(s.name), -nameWidth)
                     .arg(fromStd(shapeText(s.shape)), -14)
                     .arg(dtypeName(s.dtype), -8)
                     .arg(figure(s.min), 10)
                     .arg(figure(s.max), 10)
                     .arg(figure(s.mean), 10)
                     .arg(figure(s.std), 10)
                     .arg(QString::fromStdString(numberText(s.norm, 4)), 10)
                     .arg(s.nan, 6)
                     .arg(s.inf(), 6)
                     .arg(flags.join("; "));
        if (s.spectralNorm)
            out() << QString("%1 spectral norm %2\n").arg("", nameWidth).arg(*s.spectralNorm, 0, 'g', 4);
    }
    out() << "\n" << (flagged ? QString("%1 tensor(s) flagged").arg(flagged) : QString("no flags")) << "\n";
}

} // namespace

int runStats(const QStringList& arguments)
{
    QCommandLineParser parser;
    addStatsOptions(parser);
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("stats takes one FILE\n" + helpText(parser));

    StatsOptions options;
    const QString device = parser.value("device");
    if (device == "auto")
        options.device = StatsDevice::Auto;
    else if (device == "cpu")
        options.device = StatsDevice::Cpu;
    else if (device == "cuda")
        options.device = StatsDevice::Cuda;
    else
        return fail("--device takes auto, cpu or cuda, not '" + device + "'");
    if (parser.isSet("histogram")) {
        bool ok = false;
        options.histogramBins = parser.value("histogram").toInt(&ok);
        if (!ok || options.histogramBins < 1 || options.histogramBins > 100000)
            return fail("--histogram takes a bin count from 1 to 100000");
    }
    options.spectralNorm = parser.isSet("spectral-norm");
    HealthThresholds thresholds;
    bool thresholdOk = false;
    thresholds.normAbove = parser.value("norm-threshold").toDouble(&thresholdOk);
    if (!thresholdOk)
        return fail("--norm-threshold takes a number");
    thresholds.spectralNormAbove = thresholds.normAbove;

    const std::string path = parser.positionalArguments().first().toStdString();
    auto checkpoint = readCheckpoint(path);
    if (!checkpoint)
        return fail(fromStd(checkpoint.error()));
    const OptimizerHolding holding = optimizerHolding(*checkpoint);
    const bool optimizerOnly = parser.isSet("optimizer") || holding == OptimizerHolding::OptimizerStateOnly;
    const bool withOptimizer = optimizerOnly || holding == OptimizerHolding::BesideModel;
    const bool json = parser.isSet("json");

    std::vector<TensorStats> stats;
    if (!optimizerOnly) {
        auto computed = computeCheckpointStats(checkpoint->tensors, options);
        if (!computed)
            return fail(fromStd(path + ": " + computed.error()));
        stats = std::move(*computed);
    }

    std::optional<Result<CheckpointOptimizer>> optimizer;
    if (withOptimizer) {
        ModelParametersFound model;
        if (parser.isSet("names-from")) {
            model = findModelParameters(parser.value("names-from").toStdString());
        } else if (holding == OptimizerHolding::OptimizerStateOnly) {
            model = findModelParameters(QFileInfo(fromStd(path)).absolutePath().toStdString());
        } else {
            model.parameters = modelParametersOf(checkpoint->tensors);
            model.source = path;
        }
        // The optimizer reader opens the file again: free this reading's tensors first.
        checkpoint->tensors.clear();
        optimizer = readCheckpointOptimizer(path, model);
        if (optimizerOnly && !*optimizer)
            return fail(fromStd(optimizer->error()));
    }

    if (json) {
        QJsonObject root{{"file", fromStd(path)}, {"format", checkpointFormatName(checkpoint->format)}};
        if (!optimizerOnly) {
            QJsonArray tensors;
            for (const TensorStats& s : stats)
                tensors.append(tensorStatsToJson(s, healthFlags(s, thresholds)));
            root["tensors"] = tensors;
        }
        if (optimizer && *optimizer)
            root["optimizer"] = checkpointOptimizerToJson(**optimizer);
        else if (optimizer)
            root["optimizer_error"] = fromStd(optimizer->error());
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
        return kExitOk;
    }

    if (optimizerOnly) {
        printOptimizer(**optimizer);
        return kExitOk;
    }

    printTensorTable(path, checkpointFormatName(checkpoint->format), stats, thresholds);
    if (optimizer && *optimizer) {
        out() << "\nOptimizer state (optimizer_states[0]):\n";
        printOptimizer(**optimizer);
    } else if (optimizer) {
        out() << "\noptimizer state not read: " << fromStd(optimizer->error()) << "\n";
    }
    return kExitOk;
}

} // namespace nanscope::cli
