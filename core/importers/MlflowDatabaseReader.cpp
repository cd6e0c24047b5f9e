#include "core/importers/MlflowDatabaseReader.h"

#include "core/importers/TrainerHiddenNonfiniteLoss.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>

namespace nanscope {

namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
// A parameter's text beyond this is cut: a JSON-encoded config can be long.
constexpr size_t kMostParameterText = 400;

struct DatabaseCloser
{
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StatementCloser
{
    void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Database = std::unique_ptr<sqlite3, DatabaseCloser>;
using Statement = std::unique_ptr<sqlite3_stmt, StatementCloser>;

// A path as an SQLite URI: reserved characters escaped.
std::string fileUri(const std::string& path, const char* options)
{
    std::string uri = "file:";
    for (const unsigned char c : path) {
        if (c == '%' || c == '?' || c == '#' || c < 0x20) {
            static const char* const hex = "0123456789ABCDEF";
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        } else {
            uri += char(c);
        }
    }
    return uri + "?" + options;
}

// Read-only; `immutable` when a plain read-only open cannot read (a database in WAL mode whose
// -shm file a reader would have to create: nanscope writes nothing into a run's folder).
Result<Database> openReadOnly(const std::string& path)
{
    std::string lastError;
    for (const char* options : {"mode=ro", "immutable=1"}) {
        sqlite3* raw = nullptr;
        const int opened = sqlite3_open_v2(fileUri(path, options).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                           nullptr);
        Database db(raw);
        if (opened == SQLITE_OK) {
            sqlite3_busy_timeout(raw, 2000);
            sqlite3_stmt* probe = nullptr;
            const int prepared = sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master", -1, &probe, nullptr);
            Statement holder(probe);
            if (prepared == SQLITE_OK && sqlite3_step(probe) == SQLITE_ROW)
                return db;
        }
        lastError = raw ? sqlite3_errmsg(raw) : "out of memory";
    }
    return Error{path + ": cannot be read as an SQLite database (" + lastError + ")"};
}

Result<Statement> prepare(sqlite3* db, const std::string& path, const char* sql)
{
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
        Statement holder(raw);
        return Error{path + ": not an MLflow tracking database (" + sqlite3_errmsg(db) + ")"};
    }
    return Statement(raw);
}

std::string columnText(sqlite3_stmt* statement, int column)
{
    const unsigned char* text = sqlite3_column_text(statement, column);
    return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
}

std::string lowered(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

} // namespace

SniffVerdict sniffMlflowDatabase(const FilePrefix& file)
{
    if (file.head.size() < kSqliteMagic.size() || std::string_view(file.head).substr(0, kSqliteMagic.size()) != kSqliteMagic)
        return {0, "not an SQLite database"};
    // The schema sits on the first pages: MLflow's tables by their names.
    if (file.head.find("CREATE TABLE") != std::string::npos && file.head.find("run_uuid") != std::string::npos &&
        file.head.find("is_nan") != std::string::npos)
        return {95, "MLflow tracking database (metrics, runs and params tables)"};
    return {0, "an SQLite database without MLflow's metrics table"};
}

Result<ScalarLog> readMlflowDatabase(const std::string& path)
{
    auto db = openReadOnly(path);
    if (!db)
        return Error{db.error()};
    sqlite3* handle = db->get();

    // The latest run that logged a metric: a store's newest run is often one still starting, or
    // one that failed before its first value (seen in real stores), and it is named in a note.
    auto runs = prepare(handle, path,
                        "SELECT run_uuid, name, status, EXISTS (SELECT 1 FROM metrics m WHERE m.run_uuid = r.run_uuid) "
                        "FROM runs r WHERE lifecycle_stage != 'deleted' ORDER BY start_time DESC");
    if (!runs)
        return Error{runs.error()};
    std::string runId, runName, status;
    int64_t runCount = 0, emptyNewer = 0;
    while (sqlite3_step(runs->get()) == SQLITE_ROW) {
        ++runCount;
        if (!runId.empty())
            continue;
        if (sqlite3_column_int(runs->get(), 3) == 0) {
            ++emptyNewer;
            continue;
        }
        runId = columnText(runs->get(), 0);
        runName = columnText(runs->get(), 1);
        status = columnText(runs->get(), 2);
    }
    if (runCount == 0)
        return Error{path + ": an MLflow tracking database with no run"};
    if (runId.empty())
        return Error{path + ": an MLflow tracking database whose " + std::to_string(runCount) +
                     " runs logged no metrics"};

    ScalarLog log;
    log.path = path;
    log.format = kMlflowDatabaseFormat;
    log.attributes["mlflow_run_id"] = runId;
    if (!runName.empty())
        log.attributes["run_name"] = runName;
    if (!status.empty())
        log.attributes["mlflow_run_status"] = status;
    if (runCount > 1)
        log.notes.push_back(std::to_string(runCount) + " MLflow runs in the database; the latest that logged metrics, " +
                            (runName.empty() ? runId : runName + " (" + runId + ")") + ", is read" +
                            (emptyNewer > 0 ? " (" + std::to_string(emptyNewer) + " newer logged none)" : ""));

    auto metrics = prepare(handle, path,
                           "SELECT key, value, step, is_nan, timestamp FROM metrics WHERE run_uuid = ? "
                           "ORDER BY key, step, timestamp");
    if (!metrics)
        return Error{metrics.error()};
    sqlite3_bind_text(metrics->get(), 1, runId.c_str(), -1, SQLITE_TRANSIENT);
    int stepped = SQLITE_ROW;
    while ((stepped = sqlite3_step(metrics->get())) == SQLITE_ROW) {
        sqlite3_stmt* row = metrics->get();
        const std::string key = columnText(row, 0);
        // MLflow cannot store NaN in SQL: it writes 0 and sets is_nan.
        const double value =
            sqlite3_column_int(row, 3) != 0 ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(row, 1);
        const int64_t step = sqlite3_column_int64(row, 2);
        const double wallTime = double(sqlite3_column_int64(row, 4)) / 1000.0; // milliseconds since the epoch
        auto& points = log.series[key];
        if (!points.empty() && points.back().step == step)
            points.back() = ScalarPoint{step, value, wallTime}; // logged again at that step: the latest
        else
            points.push_back(ScalarPoint{step, value, wallTime});
    }
    if (stepped != SQLITE_DONE)
        return Error{path + ": the metrics table cannot be read to its end (" + sqlite3_errmsg(handle) + ")"};
    if (log.series.empty())
        return Error{path + ": the MLflow run " + runId + " logged no metrics"};

    auto params = prepare(handle, path, "SELECT key, value FROM params WHERE run_uuid = ?");
    if (params) {
        sqlite3_bind_text(params->get(), 1, runId.c_str(), -1, SQLITE_TRANSIENT);
        while (sqlite3_step(params->get()) == SQLITE_ROW) {
            std::string value = columnText(params->get(), 1);
            if (value.size() > kMostParameterText)
                value = value.substr(0, kMostParameterText) + "...";
            log.attributes["param." + columnText(params->get(), 0)] = value;
        }
    }
    // A Hugging Face Trainer's run (MLflowCallback logs its TrainingArguments as parameters) logs
    // 0.0 for a NaN loss.
    const auto param = [&log](const char* name) {
        const auto found = log.attributes.find(std::string("param.") + name);
        return found == log.attributes.end() ? std::string() : lowered(found->second);
    };
    if (!param("logging_nan_inf_filter").empty() &&
        trainerHidesNonfiniteLosses(param("logging_steps"), param("logging_nan_inf_filter")))
        readHiddenNonfiniteLosses(log, "loss", "grad_norm");
    return log;
}

} // namespace nanscope
