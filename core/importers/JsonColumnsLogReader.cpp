#include "core/importers/JsonColumnsLogReader.h"

#include "core/RapidJsonErrors.h"
#include "core/importers/FileText.h"
#include "core/importers/RecordSteps.h"
#include "core/importers/SkippedStepEvents.h"

#include <rapidjson/document.h>

#include <cmath>
#include <map>

namespace nanscope {

namespace {

constexpr uint64_t kMostBytes = uint64_t(16) << 20; // a document tree takes several times the text
constexpr int kDeepest = 4;
constexpr unsigned kParseFlags = rapidjson::kParseNanAndInfFlag | rapidjson::kParseIterativeFlag;

struct Column
{
    std::string name;
    std::vector<double> values; // NaN where null (not logged), with `logged` false
    std::vector<bool> logged;
};

// Every array of numbers (and nulls) under `value`, named by the keys to it.
void collect(const rapidjson::Value& value, const std::string& name, int depth, std::vector<Column>& columns)
{
    if (value.IsObject() && depth < kDeepest) {
        for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it)
            collect(it->value, name.empty() ? it->name.GetString() : name + "/" + it->name.GetString(), depth + 1,
                    columns);
        return;
    }
    if (!value.IsArray() || value.Size() < 2 || name.empty())
        return;
    Column column;
    column.name = name;
    for (const rapidjson::Value& item : value.GetArray()) {
        if (item.IsNumber()) {
            column.values.push_back(item.GetDouble());
            column.logged.push_back(true);
        } else if (item.IsNull()) {
            column.values.push_back(std::nan(""));
            column.logged.push_back(false);
        } else {
            return; // a list of text, of lists: not a series
        }
    }
    columns.push_back(std::move(column));
}

struct Columns
{
    std::vector<Column> columns;
    size_t length = 0;   // the most common length: the number of records
    size_t otherLength = 0;
    std::string error;
};

Columns readColumns(std::string_view text)
{
    Columns found;
    rapidjson::Document document;
    document.Parse<kParseFlags>(text.data(), text.size());
    if (document.HasParseError()) {
        found.error = rapidJsonErrorText(document.GetParseError()) + " at byte " +
                      std::to_string(document.GetErrorOffset());
        return found;
    }
    if (!document.IsObject()) {
        found.error = "not a JSON object";
        return found;
    }
    collect(document, "", 0, found.columns);
    std::map<size_t, size_t> lengths;
    for (const Column& c : found.columns)
        ++lengths[c.values.size()];
    size_t most = 0;
    for (const auto& [length, count] : lengths)
        if (count > most || (count == most && length > found.length)) {
            most = count;
            found.length = length;
        }
    for (const Column& c : found.columns)
        found.otherLength += c.values.size() != found.length;
    return found;
}

} // namespace

SniffVerdict sniffJsonColumnsLog(const FilePrefix& file)
{
    const size_t first = file.head.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (first == std::string::npos || file.head[first] != '{')
        return {0, "not a JSON object"};
    if (file.size > file.head.size())
        return {0, "a JSON document larger than the first 256 KiB (a history of columns is smaller)"};
    const Columns found = readColumns(file.head);
    if (!found.error.empty())
        return {0, "JSON, but " + found.error};
    if (found.columns.empty())
        return {0, "a JSON object with no arrays of numbers"};
    return {75, "a JSON document of columns: " + std::to_string(found.columns.size() - found.otherLength) +
                    " arrays of " + std::to_string(found.length) + " values"};
}

Result<ScalarLog> readJsonColumnsLog(const std::string& path)
{
    auto text = readFileText(path, kMostBytes);
    if (!text)
        return Error{text.error()};
    Columns found = readColumns(*text);
    if (!found.error.empty())
        return Error{path + ": not a JSON document (" + found.error + ")"};
    if (found.columns.empty())
        return Error{path + ": a JSON object with no arrays of numbers"};
    ScalarLog log;
    log.path = path;
    log.format = "JSON history (columns)";
    // The step: an array named as a step or an epoch whose values are integers.
    std::vector<int64_t> steps(found.length);
    for (size_t i = 0; i < found.length; ++i)
        steps[i] = int64_t(i);
    std::string stepFrom = "the position in the arrays";
    for (const Column& c : found.columns) {
        if (c.values.size() != found.length)
            continue;
        const std::string_view last = std::string_view(c.name).substr(c.name.rfind('/') + 1);
        if (records::stepKeyRank(last) < 0 && !records::isEpochKey(last) && last != "epochs")
            continue;
        std::vector<int64_t> candidate(found.length);
        bool integers = true;
        for (size_t i = 0; i < found.length && integers; ++i)
            integers = records::asStep(c.values[i], candidate[i]);
        if (integers) {
            steps = std::move(candidate);
            stepFrom = "\"" + c.name + "\"";
            break;
        }
    }
    for (const Column& c : found.columns) {
        if (c.values.size() != found.length)
            continue;
        auto& points = log.series[c.name];
        for (size_t i = 0; i < found.length; ++i)
            if (c.logged[i])
                points.push_back(ScalarPoint{steps[i], c.values[i]});
    }
    log.notes.push_back("JSON columns: " + std::to_string(log.series.size()) + " arrays of " +
                        std::to_string(found.length) + " records; step from " + stepFrom);
    if (found.otherLength > 0)
        log.notes.push_back(std::to_string(found.otherLength) + " arrays of another length than " +
                            std::to_string(found.length) + " are not series");
    addSkippedStepEvents(log);
    return log;
}

} // namespace nanscope
