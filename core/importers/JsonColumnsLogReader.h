#pragma once

// A training history saved as one JSON document of columns: Keras' `history.history` written with
// json.dump ({"loss": [...], "val_loss": [...]}), or the same under an object of its own
// ({"epochs": [...], "metrics": {"loss": [...]}}). Each array of numbers is a series, its name the
// keys to it joined with '/' ("metrics/loss"); the i-th values of the arrays are one record. The
// step is an array named as a step or an epoch ("epochs", "step") when its values are integers,
// else the position. NaN, Infinity and -Infinity are data; null is a value not logged. Arrays of
// another length than the most common one are left out with a note. The file is read whole (a
// history of this shape is small): at most 16 MiB.

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

SniffVerdict sniffJsonColumnsLog(const FilePrefix& file);
Result<ScalarLog> readJsonColumnsLog(const std::string& path);

} // namespace nanscope
