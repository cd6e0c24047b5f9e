#pragma once

// Opens whatever a user points nanscope at: a run directory (run.h5), a Hugging Face Trainer output
// folder (trainer_state.json, checkpoint-N/, runs/ event files), a Lightning log folder
// (metrics.csv, checkpoints/*.ckpt), TensorBoard event files, DeepSpeed or Megatron text logs, a
// folder of checkpoints, a multi-rank run (ranks.json and one run directory per rank, opened as a
// RankSet showing rank 0), or one of those files itself. Every command and the window open runs here.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/run/RunSource.h"

#include <memory>
#include <string>
#include <vector>

namespace nanscope {

// The files of a folder that nanscope can read, by kind, as detection found them.
struct FoundLogs
{
    std::string runFile;                  // run.h5: read alone, the others are ignored
    std::string trainerState;             // the most complete trainer_state.json
    std::vector<std::string> metricsCsv;  // Lightning CSVLogger files, the latest version first
    std::vector<std::string> eventFiles;  // TensorBoard event files of one run, oldest first
    // Files that no name identifies, whose first bytes a reader recognised (LogReaderRegistry.h):
    // console logs, JSON lines, tables, W&B run files; each with the reader and what it found.
    std::vector<SniffedFile> sniffedLogs;
    std::vector<std::string> mlflowRuns;  // MLflow file-store run folders (meta.yaml + metrics/), the latest
    std::vector<std::string> wandbHistories; // W&B files/wandb-history.jsonl (TrackerFolderReader)
    std::map<int64_t, std::string> checkpoints; // weights files by step, for the checkpoints pane
    // What the per-layer series read, by step: a checkpoint-N/ folder (shards, adapters and all)
    // or a checkpoint file.
    std::map<int64_t, std::string> checkpointSources;
    std::vector<std::string> notes;       // what detection passed over, and why
    // Files that are no log nanscope reads, each with why ("FILE: JSON, but not ..."): named when
    // nothing in the folder is a run.
    std::vector<std::string> passedOver;

    bool empty() const
    {
        return runFile.empty() && trainerState.empty() && metricsCsv.empty() && eventFiles.empty() &&
               sniffedLogs.empty() && mlflowRuns.empty() && wandbHistories.empty() &&
               checkpoints.empty() && checkpointSources.empty();
    }
};

// Looks through `path` (a folder, a few levels deep, or one file) without reading the logs.
FoundLogs findLogs(const std::string& path);

// Opens the run at `path`. An error names the path and says what was looked for. Reading a folder
// of checkpoints for their per-layer series is the long part; `progress` follows it and can cancel.
Result<std::unique_ptr<RunSource>> openRun(const std::string& path, const ProgressCallback& progress = {});

// Checkpoints are read at open for their per-layer series up to this many bytes in all: a folder
// of a few 7B-parameter checkpoints would take minutes, so beyond it the series are left out and a
// note says so (the checkpoints pane still reads any one of them).
inline constexpr uint64_t kMostCheckpointBytesAtOpen = uint64_t(4) << 30;

} // namespace nanscope
