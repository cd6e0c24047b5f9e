#pragma once

// Names fixed by the run directory contract (docs/run-format.md). One place, so that the
// reader, the writer, the scanner and the views cannot drift apart.
#include "RunFormatTable.h"

#include <cstdint>
#include <optional>
#include <string>

namespace nanscope::runformat {

inline constexpr const char* kLogFileName = "run.h5";
inline constexpr const char* kCheckpointDir = "checkpoints";
inline constexpr const char* kBatchDir = "batches";
inline constexpr const char* kFormatName = "training-run";
inline constexpr int kFormatVersion = 1;
// How a run.h5 source is named to users (RunInfo::source.format).
inline constexpr const char* kNativeSourceFormat = "nanscope run (run.h5)";

// Root attributes the Python recorder writes so that eager replay can rebuild a model whose
// checkpoints are state_dicts: the factory ("module:callable" or "/path/script.py:callable"), the
// folders it imports from (os.pathsep-separated) and the interpreter that trained.
inline constexpr const char* kModelFactoryAttribute = "model_factory";
inline constexpr const char* kModelFactoryPathAttribute = "model_factory_path";
inline constexpr const char* kPythonExecutableAttribute = "python_executable";
// Set by a log reader, not written by recorders: the steps ("11,42") whose logged loss the
// framework replaced by 0.0 for a NaN or Inf (core/importers/TrainerHiddenNonfiniteLoss.h).
inline constexpr const char* kLossLoggedAsZeroAttribute = "nonfinite_loss_logged_as_zero";

inline constexpr const char* kScalars = "scalars";
// A dataset of /scalars as an incident's evidence names its series ("loss" -> "scalars/loss").
inline std::string scalarSeries(const std::string& dataset)
{
    return std::string(kScalars) + "/" + dataset;
}
inline constexpr const char* kLayers = "layers";
inline constexpr const char* kActivations = "activations";
inline constexpr const char* kBuffers = "buffers";
inline constexpr const char* kInputs = "inputs";
inline constexpr const char* kEvents = "events";

inline constexpr const char* kSteps = "steps";
inline constexpr const char* kNames = "names";
inline constexpr const char* kKinds = "kinds";

// Every table group the contract defines, in the order they are listed to users.
inline constexpr const char* kTables[] = {kScalars, kLayers, kActivations, kBuffers, kInputs, kEvents};

// Scalar series logged at a rate of their own (evaluation every 100 steps, an epoch-level
// metric) live in tables of their own steps, since a value not measured must never read as NaN:
// /eval, and any /scalars_<name>. Like /scalars: `steps` and float64 [n] series.
inline constexpr const char* kEval = "eval";
inline constexpr const char* kSeriesTablePrefix = "scalars_";
inline bool isSeriesTableName(const std::string& name)
{
    return name == kScalars || name == kEval || name.rfind(kSeriesTablePrefix, 0) == 0;
}

// Series that give the steps another axis, in any series table (the window can plot against
// them, as TensorBoard and W&B do): `wall_time` is seconds since the Unix epoch when the step
// ended, `epoch` the (possibly fractional) epoch the step belongs to.
inline constexpr const char* kWallTime = "wall_time";
inline constexpr const char* kEpoch = "epoch";

// The kinds of /events rows (rf::event::kSkippedStep, ...), the datasets of the [n, L] tables and
// /events (rf::column::kGradNorm, ...), the step-file names and the defences' defaults come from
// RunFormatTable.h, generated from the table the Python recorder reads too
// (python/nanscope_recorder/run_format.json).

// A multi-rank run (torch.distributed): a folder holding the manifest and one run directory per
// rank, each with that rank's own state file (docs/run-format.md, "Multi-rank runs").
inline constexpr const char* kRankManifestName = "ranks.json";
inline constexpr const char* kRankManifestFormat = "training-run-ranks";
inline constexpr int kRankManifestVersion = 1;
inline constexpr const char* kRankDirPrefix = "rank_";
inline constexpr int kRankDirDigits = 5;
inline constexpr const char* kRankStatusName = "rank.json";
inline constexpr const char* kRankStateRunning = "running";
inline constexpr const char* kRankStateFinished = "finished";
// The norm of the gradient a rank's own backward produced, before the all-reduce: /scalars (the
// whole model) and /layers (per parameter).
inline constexpr const char* kLocalGradNorm = column::kLocalGradNorm;
// "rank_00002" for rank 2.
inline std::string rankDirName(int rank)
{
    std::string digits = std::to_string(rank);
    if (digits.size() < size_t(kRankDirDigits))
        digits.insert(0, size_t(kRankDirDigits) - digits.size(), '0');
    return kRankDirPrefix + digits;
}

// "step_00000042" for step 42: the stem of a checkpoint or batch file that a recorder writes.
std::string stepFileStem(int64_t step);

// A step file's name taken apart: "step_00000042.pt" -> {42, "pt"}. Any number of digits is read
// (other tools do not pad), up to 18 so the step fits; nothing else may follow the extension
// ("step_1.pt.partial" is an unfinished write, not a step file).
struct StepFileName
{
    int64_t step = 0;
    std::string extension; // without its dot
};
std::optional<StepFileName> parseStepFileName(const std::string& fileName);

// The extensions a step's checkpoint file has: a TorchScript or pickled checkpoint (pt, pth) or a
// torch.export archive (pt2), which replay can load and a .form file can describe, or weights
// alone (safetensors).
bool isTorchCheckpointExtension(const std::string& extension);
bool isCheckpointExtension(const std::string& extension);

} // namespace nanscope::runformat
