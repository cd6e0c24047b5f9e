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

inline constexpr const char* kScalars = "scalars";
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

} // namespace nanscope::runformat
