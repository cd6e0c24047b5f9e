#pragma once

// Names fixed by the run directory contract (docs/run-format.md). One place, so that the
// reader, the writer, the scanner and the views cannot drift apart.
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

// The kinds of /events rows, written by the Python recorder and the C++ Guard alike
// (python/nanscope_recorder keeps the same strings; docs/run-format.md lists them).
namespace event {
inline constexpr const char* kSkippedStep = "skipped_step";           // the step was not applied
inline constexpr const char* kLossScaleDecrease = "loss_scale_decrease";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kBatchSaved = "batch_saved";
inline constexpr const char* kNonfiniteLoss = "nonfinite_loss";
inline constexpr const char* kNote = "note";
inline constexpr const char* kRollback = "rollback";                  // weights and optimizer state restored
inline constexpr const char* kBuffersRestored = "buffers_restored";   // BatchNorm buffers put back on a skipped step
inline constexpr const char* kIncidentCapture = "incident_capture";   // the batch ring and its checkpoint written
} // namespace event

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
inline constexpr const char* kLocalGradNorm = "local_grad_norm";
// "rank_00002" for rank 2.
inline std::string rankDirName(int rank)
{
    std::string digits = std::to_string(rank);
    if (digits.size() < size_t(kRankDirDigits))
        digits.insert(0, size_t(kRankDirDigits) - digits.size(), '0');
    return kRankDirPrefix + digits;
}

} // namespace nanscope::runformat
