#pragma once

// The folders experiment trackers keep next to a run, read from their files on disk:
//
// MLflow's file store: mlruns/<experiment>/<run>/meta.yaml and metrics/<name>, one line per logged
// value, "<timestamp ms> <value> <step>" (MLflow's FileStore writes it so; a line of two fields is
// step 0, as MLflow reads it). A metric logged under "train/loss" is the file metrics/train/loss.
// NaN is written as "nan".
//
// A W&B run folder (wandb/run-<date>-<id>/): the W&B SDK before 0.10 wrote files/wandb-history.jsonl,
// one JSON object per logged step with "_step", "_timestamp" and the metrics; later SDKs keep the
// history only in the binary run-<id>.wandb record file, which WandbRecordReader reads (the
// folder's files/output.log, the script's stdout, is read by the text log readers).
//
// tests/source/TrackerFolderReaderTest.cpp cites the real folders these shapes come from.

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

// A folder holding meta.yaml and a metrics/ folder.
bool isMlflowRunFolder(const std::string& folder);
// meta.yaml's start_time (ms), 0 when it has none: the latest run of a store is read.
int64_t mlflowRunStartTime(const std::string& folder);
Result<ScalarLog> readMlflowRun(const std::string& folder);

Result<ScalarLog> readWandbHistory(const std::string& path);

} // namespace nanscope
