#include "CliSupport.h"
#include "Subcommands.h"
#include "JsonNumbers.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/tensor/TensorStats.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <optional>

namespace nanscope::cli {

namespace {

QJsonArray shapeArray(const std::vector<int64_t>& shape)
{
    QJsonArray array;
    for (int64_t extent : shape)
        array.append(qint64(extent));
    return array;
}

QString shapeText(const std::vector<int64_t>& shape)
{
    QStringList parts;
    for (int64_t extent : shape)
        parts << QString::number(extent);
    return "[" + parts.join(", ") + "]";
}

QString figure(const std::optional<double>& value)
{
    return value ? QString::number(*value, 'g', 4) : QString("-");
}

} // namespace

int runStats(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Tensor health of a checkpoint: torch.save state_dicts and training checkpoints, TorchScript archives and "
        "safetensors files, read without running anything from the file.");
    parser.addPositionalArgument("FILE", "The checkpoint file.");
    parser.addOption({"json", "Print JSON instead of a table."});
    parser.addOption({"device", "Where to compute: auto (CUDA for tensors saved from CUDA when available), cpu or cuda.",
                      "DEVICE", "auto"});
    parser.addOption({"histogram", "Also count the finite values of each tensor into BINS bins over [min, max].", "BINS"});
    parser.addOption({"spectral-norm", "Also estimate the spectral norm of 2-D (and flattened N-D) weights."});
    parser.addOption({"norm-threshold", "Flag tensors whose L2 norm exceeds this (default 1e6).", "VALUE", "1e6"});
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
    auto stats = computeCheckpointStats(checkpoint->tensors, options);
    if (!stats)
        return fail(fromStd(path + ": " + stats.error()));

    if (parser.isSet("json")) {
        QJsonArray tensors;
        for (const TensorStats& s : *stats) {
            QJsonObject t{{"name", fromStd(s.name)},
                          {"shape", shapeArray(s.shape)},
                          {"dtype", dtypeName(s.dtype)},
                          {"numel", qint64(s.numel)},
                          {"min", jsonNumber(s.min)},
                          {"max", jsonNumber(s.max)},
                          {"mean", jsonNumber(s.mean)},
                          {"std", jsonNumber(s.std)},
                          {"norm", s.norm},
                          {"absmax", s.absmax},
                          {"nan", qint64(s.nan)},
                          {"posinf", qint64(s.posinf)},
                          {"neginf", qint64(s.neginf)},
                          {"inf", qint64(s.inf())},
                          {"zero", qint64(s.zero)},
                          {"subnormal", qint64(s.subnormal)}};
            QJsonArray flags;
            for (const auto& flag : healthFlags(s, thresholds))
                flags.append(fromStd(flag));
            t["flags"] = flags;
            if (options.histogramBins > 0) {
                QJsonArray bins;
                for (int64_t count : s.histogram)
                    bins.append(qint64(count));
                t["histogram"] = bins;
            }
            if (options.spectralNorm)
                t["spectral_norm"] = jsonNumber(s.spectralNorm);
            tensors.append(t);
        }
        QJsonObject root{{"file", fromStd(path)},
                         {"format", checkpointFormatName(checkpoint->format)},
                         {"tensors", tensors}};
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
        return kExitOk;
    }

    int nameWidth = 6;
    for (const auto& s : *stats)
        nameWidth = std::max(nameWidth, int(s.name.size()));
    nameWidth = std::min(nameWidth, 48);
    out() << fromStd(path) << "  (" << checkpointFormatName(checkpoint->format) << ", " << stats->size()
          << " tensors)\n\n";
    out() << QString("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10  %11\n")
                 .arg("tensor", -nameWidth)
                 .arg("shape", -14)
                 .arg("dtype", -8)
                 .arg("min", 10)
                 .arg("max", 10)
                 .arg("mean", 10)
                 .arg("std", 10)
                 .arg("norm", 10)
                 .arg("nan", 6)
                 .arg("inf", 6)
                 .arg("flags");
    int flagged = 0;
    for (const auto& s : *stats) {
        QStringList flags;
        for (const auto& flag : healthFlags(s, thresholds))
            flags << fromStd(flag);
        if (!flags.isEmpty())
            ++flagged;
        out() << QString("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10  %11\n")
                     .arg(fromStd(s.name), -nameWidth)
                     .arg(shapeText(s.shape), -14)
                     .arg(dtypeName(s.dtype), -8)
                     .arg(figure(s.min), 10)
                     .arg(figure(s.max), 10)
                     .arg(figure(s.mean), 10)
                     .arg(figure(s.std), 10)
                     .arg(QString::number(s.norm, 'g', 4), 10)
                     .arg(s.nan, 6)
                     .arg(s.inf(), 6)
                     .arg(flags.join("; "));
        if (s.spectralNorm)
            out() << QString("%1 spectral norm %2\n").arg("", nameWidth).arg(*s.spectralNorm, 0, 'g', 4);
    }
    out() << "\n" << (flagged ? QString("%1 tensor(s) flagged").arg(flagged) : QString("no flags")) << "\n";
    return kExitOk;
}

} // namespace nanscope::cli
