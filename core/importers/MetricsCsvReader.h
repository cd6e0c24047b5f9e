#pragma once

// PyTorch Lightning's CSVLogger metrics.csv: a `step` column, usually `epoch`, and one column per
// logged metric. Each row holds what one log call wrote, so most cells are empty.

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

inline constexpr const char* kMetricsCsvFormat = "PyTorch Lightning CSVLogger (metrics.csv)";

// Every column but `step` becomes series[column header] (`epoch` too); an empty cell is a value not
// logged, "nan" / "inf" / "-inf" / "Infinity" are data. How damage is read:
//  - a cell that is not a number: skipped, with a warning naming the column and its lines;
//  - a row with more fields than the header: skipped, as no one can tell which field is extra;
//  - a row with fewer: its fields fill the columns from the left, the rest are empty;
//  - a last row with no line break after it (Python's csv module ends every row with one, so the
//    file was cut off or is being written): its last field may be cut mid-number ("21" read as
//    "2") and is not used; when that field is the step, the row is not read.
// Each such row has a warning naming its line;
//  - no `step` column: the row index is the step, with a warning.
// A step that goes back while the epoch grows (loggers that count steps per epoch) is offset to
// continue after the previous epoch's last step; one that goes back without a new epoch (a resumed
// run) is kept as it is. A note says which happened. Simple `key: value` lines of an hparams.yaml
// beside the file become attributes. Error when the file cannot be read, is empty or binary, or
// has neither a `step` column nor any number (some other text file).
Result<ScalarLog> readMetricsCsv(const std::string& path);

} // namespace nanscope
