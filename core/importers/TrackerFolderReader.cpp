#include "core/importers/TrackerFolderReader.h"

#include "core/importers/JsonFields.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nanscope {

using json::JsonField;

namespace fs = std::filesystem;

namespace {

// A metric file or a history larger than this is not read whole: the rest is said to be skipped.
constexpr uintmax_t kMostBytesRead = uintmax_t(512) << 20;
constexpr size_t kMostLineBytes = 1 << 20;
constexpr size_t kMostMetrics = 10000;

// A number as MLflow writes it ("0.25", "nan", "inf", "-inf"), or false.
bool parseNumber(const std::string& token, double& value)
{
    if (token.empty())
        return false;
    char* end = nullptr;
    value = std::strtod(token.c_str(), &end); // strtod reads nan, inf and -inf too
    return end == token.c_str() + token.size();
}

bool parseStep(const std::string& token, int64_t& step)
{
    double value = 0;
    if (!parseNumber(token, value) || !std::isfinite(value) || value != std::floor(value) || std::fabs(value) > 9e15)
        return false;
    step = int64_t(value);
    return true;
}

} // namespace

bool isMlflowRunFolder(const std::string& folder)
{
    std::error_code ec;
    return fs::is_regular_file(fs::path(folder) / "meta.yaml", ec) && fs::is_directory(fs::path(folder) / "metrics", ec);
}

int64_t mlflowRunStartTime(const std::string& folder)
{
    std::ifstream in(fs::path(folder) / "meta.yaml");
    std::string line;
    for (int lines = 0; lines < 200 && std::getline(in, line); ++lines)
        if (line.rfind("start_time:", 0) == 0) {
            int64_t time = 0;
            std::istringstream(line.substr(11)) >> time;
            return time;
        }
    return 0;
}

Result<ScalarLog> readMlflowRun(const std::string& folder)
{
    const fs::path metrics = fs::path(folder) / "metrics";
    ScalarLog log;
    log.path = folder;
    log.format = "MLflow run (file store)";
    std::error_code ec;
    size_t files = 0;
    for (auto it = fs::recursive_directory_iterator(metrics, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec))
            continue;
        if (++files > kMostMetrics) {
            log.notes.push_back(metrics.string() + ": more than " + std::to_string(kMostMetrics) +
                                " metric files; the rest are not read");
            break;
        }
        const std::string name = it->path().lexically_relative(metrics).generic_string();
        std::ifstream in(it->path(), std::ios::binary);
        std::string line;
        uintmax_t bytes = 0;
        uint64_t number = 0, bad = 0;
        while (std::getline(in, line)) {
            ++number;
            bytes += line.size() + 1;
            if (bytes > kMostBytesRead) {
                log.warnings.push_back(it->path().string() + ": larger than 512 MiB; lines from " +
                                       std::to_string(number) + " on are not read");
                break;
            }
            if (line.size() > kMostLineBytes || line.find('\0') != std::string::npos) {
                log.warnings.push_back(it->path().string() + ": line " + std::to_string(number) +
                                       " is not a metric line (binary data, or a line of " +
                                       std::to_string(line.size()) + " bytes); the file is not read further");
                break;
            }
            std::istringstream fields(line);
            std::string timestamp, value, step, extra;
            fields >> timestamp >> value >> step >> extra;
            double time = 0, number_ = 0;
            int64_t at = 0;
            if (timestamp.empty())
                continue;
            if (!parseNumber(timestamp, time) || !parseNumber(value, number_) || (!step.empty() && !parseStep(step, at)) ||
                !extra.empty()) {
                ++bad;
                continue;
            }
            log.add(name, step.empty() ? 0 : at, number_, time / 1000.0);
        }
        if (bad > 0)
            log.warnings.push_back(it->path().string() + ": " + std::to_string(bad) +
                                   " lines are not \"timestamp value step\" and were skipped");
    }
    if (ec)
        return Error{metrics.string() + ": cannot be listed (" + ec.message() + ")"};
    if (log.series.empty())
        return Error{folder + ": an MLflow run with no metric values in " + metrics.string()};
    return log;
}

Result<ScalarLog> readWandbHistory(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{path + ": cannot be read"};
    ScalarLog log;
    log.path = path;
    log.format = "W&B run history (wandb-history.jsonl)";
    std::string line;
    uint64_t number = 0, bad = 0;
    uintmax_t bytes = 0;
    int64_t implicitStep = 0;
    std::vector<JsonField> row; // one line's fields; its memory serves every line
    while (std::getline(in, line)) {
        ++number;
        bytes += line.size() + 1;
        if (bytes > kMostBytesRead) {
            log.warnings.push_back(path + ": larger than 512 MiB; lines from " + std::to_string(number) +
                                   " on are not read");
            break;
        }
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        if (line.size() > kMostLineBytes || line.find('\0') != std::string::npos) {
            ++bad;
            continue;
        }
        std::string error;
        if (!json::readObjectFields(line, row, error)) {
            ++bad;
            continue;
        }
        // The SDK's own fields are finite numbers; a NaN (or a number past int64) there is no step.
        const auto finiteNumber = [](const JsonField* f) {
            return f && f->kind == JsonField::Kind::Number && std::fabs(f->number) < 9.0e18;
        };
        int64_t step = implicitStep;
        if (const JsonField* stepField = json::findField(row, "_step"); finiteNumber(stepField))
            step = int64_t(stepField->number);
        implicitStep = step + 1;
        const JsonField* timeField = json::findField(row, "_timestamp");
        const double time = finiteNumber(timeField) ? timeField->number : std::nan("");
        for (const JsonField& f : row) {
            if (!f.key.empty() && f.key.front() == '_')
                continue; // _step, _runtime, _timestamp, _wandb: the SDK's own
            if (f.kind != JsonField::Kind::Number)
                continue; // a histogram, an image, a table: not a scalar
            log.add(f.key, step, f.number, time);
        }
    }
    if (bad > 0)
        log.warnings.push_back(path + ": " + std::to_string(bad) + " lines are not JSON objects and were skipped");
    if (log.series.empty())
        return Error{path + ": no scalar values in " + std::to_string(number) + " lines"};
    return log;
}

} // namespace nanscope
