#pragma once

// A log of one JSON object a line, whoever wrote it: detectron2's metrics.json ("iteration"),
// mmdetection's *.log.json ("mode", "epoch", "iter"), LLaMA-Factory's trainer_log.jsonl
// ("current_steps"), W&B's wandb-history.jsonl ("_step"), a script's own json.dumps per step.
// Each object is a record for RecordAssembler, which finds the step and the series: numbers are
// values (NaN, Infinity and -Infinity as Python writes them), null is a name logged without a
// value, text, lists and nested objects are not series. An object that says it is an evaluation
// ("mode", "phase" or "split" other than "train") has its names prefixed with that word ("val/")
// and is placed at the training step before it. `_timestamp` (W&B) is the record's wall time;
// other names starting with '_' are the logger's own. A line that is not a JSON object is
// skipped and counted; the read streams the file with a bounded line length.

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

SniffVerdict sniffJsonLinesLog(const FilePrefix& file);
Result<ScalarLog> readJsonLinesLog(const std::string& path);

} // namespace nanscope
