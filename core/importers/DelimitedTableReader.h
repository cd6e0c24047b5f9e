#pragma once

// A table of training metrics, one row a record, whoever wrote it: Ultralytics' results.csv
// (headers padded with spaces, `train/box_loss`, a row per epoch), stable-baselines3's progress.csv
// (`time/total_timesteps`, empty cells), Keras' CSVLogger, timm's summary.csv, a script's own
// csv.writer; comma, tab or semicolon separated, as the first lines show. The header names the
// series; each row is a record for RecordAssembler, which finds the step (a step column, else an
// integer epoch column, else the row order). An empty cell is a value not logged at that row;
// "nan", "inf" and their spellings are data. The read streams the file row by row; a row with
// more or fewer cells than the header is read as far as it goes and counted. (Lightning's
// metrics.csv has a reader of its own, MetricsCsvReader, which also reads its hparams.yaml.)

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

SniffVerdict sniffDelimitedTable(const FilePrefix& file);
Result<ScalarLog> readDelimitedTable(const std::string& path);

} // namespace nanscope
