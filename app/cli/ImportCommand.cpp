#include "app/cli/CliSupport.h"
#include "app/cli/Subcommands.h"

#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"
#include "core/open/OpenRun.h"

#include <QDir>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace nanscope::cli {

namespace {

namespace rf = runformat;

enum class CheckpointHandling { Link, Copy, Skip };

// The run format's checkpoint extension for another tool's weights file: a torch.save zip
// (pytorch_model.bin, a Lightning .ckpt) is a .pt; safetensors stay safetensors.
std::string checkpointExtension(const std::string& path)
{
    return fs::path(path).extension() == ".safetensors" ? ".safetensors" : ".pt";
}

RunSchema schemaFor(const RunSource& source)
{
    const RunInfo& info = source.info();
    RunSchema schema;
    schema.attributes = info.attributes;
    schema.attributes["run_name"] = info.runName;
    schema.attributes["imported_from"] = info.source.format;
    schema.attributes.erase("format"); // the run format's own attribute, written by RunWriter
    schema.attributes.erase("format_version");
    schema.scalars = info.table(rf::kScalars)->datasets;
    for (const TableInfo& table : info.tables) {
        if (table.name != rf::kScalars && rf::isSeriesTableName(table.name))
            schema.seriesTables[table.name] = table.datasets;
    }
    if (const TableInfo* layers = info.table(rf::kLayers)) {
        schema.layers = layers->names;
        const auto& d = layers->datasets;
        auto has = [&](const char* name) { return std::find(d.begin(), d.end(), name) != d.end(); };
        schema.layerGradNorm = has(rf::column::kGradNorm);
        schema.layerParamNorm = has(rf::column::kParamNorm);
        schema.layerGradNonfinite = has(rf::column::kGradNonfinite);
    }
    if (const TableInfo* buffers = info.table(rf::kBuffers))
        schema.buffers = buffers->names;
    schema.events = info.table(rf::kEvents) != nullptr;
    return schema;
}

Status copyTables(const RunSource& source, RunWriter& writer)
{
    for (const TableInfo& table : source.info().tables) {
        const auto& steps = source.steps(table.name);
        if (table.rows == 0)
            continue;
        const std::vector<int64_t> rows(steps.begin(), steps.begin() + std::min<int64_t>(table.rows, steps.size()));
        if (rf::isSeriesTableName(table.name)) {
            std::map<std::string, std::vector<double>> series;
            for (const std::string& dataset : table.datasets) {
                auto values = source.readSeries(table.name, dataset);
                if (!values)
                    return Error{values.error()};
                values->resize(rows.size());
                series[dataset] = std::move(*values);
            }
            if (Status s = writer.appendSeries(table.name, rows, series); !s)
                return s;
        } else if (table.name == rf::kEvents) {
            auto kinds = source.readStrings(table.name, rf::column::kKind);
            auto messages = source.readStrings(table.name, rf::column::kMessage);
            if (!kinds || !messages)
                return Error{!kinds ? kinds.error() : messages.error()};
            for (size_t i = 0; i < rows.size() && i < kinds->size() && i < messages->size(); ++i)
                if (Status s = writer.appendEvent(rows[i], (*kinds)[i], (*messages)[i]); !s)
                    return s;
        } else if (table.name == rf::kLayers || table.name == rf::kBuffers) {
            std::map<std::string, std::vector<float>> datasets;
            for (const std::string& dataset : table.datasets) {
                auto block = source.readBlock(table.name, dataset, 0, int64_t(rows.size()));
                if (!block)
                    return Error{block.error()};
                datasets[dataset] = std::move(*block);
            }
            if (Status s = writer.appendRows(table.name, rows, datasets); !s)
                return s;
        }
    }
    return Status::success();
}

Result<int> placeCheckpoints(const RunInfo& info, const RunWriter& writer, CheckpointHandling handling)
{
    int placed = 0;
    if (handling == CheckpointHandling::Skip)
        return placed;
    for (const auto& [step, from] : info.checkpoints) {
        const std::string to = writer.checkpointPath(step, checkpointExtension(from));
        std::error_code ec;
        if (handling == CheckpointHandling::Link)
            fs::create_symlink(fs::absolute(from, ec), to, ec);
        else
            fs::copy_file(from, to, ec);
        if (ec)
            return Error{"cannot " + std::string(handling == CheckpointHandling::Link ? "link " : "copy ") + from +
                         " to " + to + ": " + ec.message()};
        ++placed;
    }
    return placed;
}

} // namespace

int runImport(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Write a nanscope run directory (run.h5, checkpoints/) from another tool's logs: a Hugging Face "
        "Trainer folder, a Lightning log folder, TensorBoard event files, a DeepSpeed or Megatron log, a "
        "folder of checkpoints. The source is only read.");
    parser.addPositionalArgument("SOURCE", kRunArgumentHelp);
    parser.addPositionalArgument("RUN_DIR", "The run directory to create (must not hold a run.h5).");
    parser.addOption({"checkpoints", "What to do with the source's checkpoints: link (symbolic links, the "
                                     "default), copy, or none.",
                      "MODE", "link"});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 2)
        return fail("import takes SOURCE and RUN_DIR\n" + helpText(parser));
    const QString mode = parser.value("checkpoints");
    if (mode != "link" && mode != "copy" && mode != "none")
        return fail("--checkpoints takes link, copy or none, not '" + mode + "'");
    const CheckpointHandling handling = mode == "link"   ? CheckpointHandling::Link
                                        : mode == "copy" ? CheckpointHandling::Copy
                                                         : CheckpointHandling::Skip;

    const std::string sourcePath = parser.positionalArguments()[0].toStdString();
    const std::string runDir = parser.positionalArguments()[1].toStdString();
    auto source = openRun(sourcePath);
    if (!source)
        return fail(fromStd(source.error()));
    const RunInfo& info = (*source)->info();
    if (info.source.format == rf::kNativeSourceFormat)
        return fail(fromStd(sourcePath + " is already a nanscope run; nothing to import"));
    const TableInfo* scalars = info.table(rf::kScalars);
    if (!scalars || std::find(scalars->datasets.begin(), scalars->datasets.end(), runformat::scalar::kLoss) == scalars->datasets.end())
        return fail(fromStd(sourcePath + ": no training loss is logged, and a run.h5 requires /scalars/loss; "
                                         "open the source directly instead (nanscope " + sourcePath + ")"));
    std::error_code ec;
    if (fs::equivalent(fs::absolute(sourcePath, ec), fs::absolute(runDir, ec), ec))
        return fail("RUN_DIR must not be the source folder: nanscope never writes into the logs it reads");

    auto writer = RunWriter::create(runDir, schemaFor(**source));
    if (!writer)
        return fail(fromStd(writer.error()));
    if (Status s = copyTables(**source, **writer); !s)
        return fail(fromStd(s.error()));
    auto placed = placeCheckpoints(info, **writer, handling);
    if (!placed)
        return fail(fromStd(placed.error()));
    if (Status s = (*writer)->close(); !s)
        return fail(fromStd(s.error()));

    out() << "wrote " << fromStd((fs::path(runDir) / rf::kLogFileName).string()) << " from "
          << fromStd(info.source.format) << "\n";
    for (const TableInfo& table : info.tables)
        if (table.rows > 0)
            out() << "  /" << fromStd(table.name) << ": " << table.rows << " rows\n";
    if (*placed > 0)
        out() << "  " << *placed << " checkpoints " << (handling == CheckpointHandling::Link ? "linked" : "copied")
              << " into " << fromStd((fs::path(runDir) / rf::kCheckpointDir).string()) << "\n";
    for (const std::string& warning : info.source.warnings)
        out() << "  warning: " << fromStd(warning) << "\n";
    return kExitOk;
}

} // namespace nanscope::cli
