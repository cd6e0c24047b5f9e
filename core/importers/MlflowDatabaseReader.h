#pragma once

// MLflow's local tracking store as MLflow 3 keeps it: one SQLite database (mlflow.db, the default
// since the file store under mlruns/ went into maintenance mode), whose `metrics` table holds every
// logged value (key, value, step, timestamp, run_uuid, is_nan: a NaN is stored as 0 with is_nan 1)
// and `params` the run's parameters. The latest run that is not deleted is read; the database is
// opened read-only and nothing is written beside it.

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"

#include <string>

namespace nanscope {

inline constexpr const char* kMlflowDatabaseFormat = "MLflow tracking database (SQLite)";

SniffVerdict sniffMlflowDatabase(const FilePrefix& file);
Result<ScalarLog> readMlflowDatabase(const std::string& path);

} // namespace nanscope
