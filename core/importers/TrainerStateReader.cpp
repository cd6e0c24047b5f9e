#include "core/importers/TrainerStateReader.h"

#include "core/importers/TrainerHiddenNonfiniteLoss.h"
#include "core/importers/FileText.h"
#include "core/importers/JsonFields.h"
#include "core/importers/JsonScan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace nanscope {

namespace {

using json::JsonField;
using jsonscan::skipWhitespace;
using jsonscan::ValueExtent;

// The 6687-step trainer_state.json is 1.2 MB; a gigabyte is no trainer_state.json.
constexpr uint64_t kMaxTrainerStateBytes = uint64_t(1) << 30;

using namespace std::string_view_literals; // compared as views: the lengths first, no strlen

// The Trainer's closing log call carries run totals, which are not values at a step.
bool isSummaryEntry(const std::vector<JsonField>& entry)
{
    return std::any_of(entry.begin(), entry.end(), [](const JsonField& field) {
        const std::string_view key = field.key;
        return key == "train_runtime"sv || key == "train_samples_per_second"sv || key == "train_steps_per_second"sv
            || key == "total_flos"sv;
    });
}

std::string formatNumber(double value)
{
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "Infinity" : "-Infinity";
    char buffer[32];
    const std::to_chars_result written = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, written.ptr);
}

// A few printable characters of what is at `position`, for an error that says what the file holds.
std::string excerptAt(std::string_view text, size_t position)
{
    std::string excerpt;
    for (size_t i = position; i < text.size() && excerpt.size() < 24; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n' || c == '\r')
            break;
        excerpt += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
    }
    return excerpt;
}

class TrainerStateParser {
public:
    TrainerStateParser(std::string_view text, ScalarLog& log)
        : m_text(text)
        , m_log(log)
    {
    }

    Status parse();

private:
    enum class ListEnd { Closed, Stopped };
    ListEnd readLogHistory(size_t& position);
    // An entry the one-pass read refused, cut out by JsonScan: read if its extent holds a valid
    // object, else skipped with a warning; false (with the warning) when the list cannot go on.
    bool readDamagedEntry(size_t cursor, int number, jsonscan::ValueExtent& extent);
    void readEntry(const std::vector<JsonField>& entry, int number, size_t byte);
    void keepTopLevelField(const std::string& key, std::string_view raw, size_t byte);
    void addNotes();

    static std::string entryLabel(int number, size_t byte)
    {
        return "log_history entry " + std::to_string(number) + " (byte " + std::to_string(byte) + ")";
    }
    std::string entriesReadSoFar() const { return std::to_string(m_entriesRead) + " entries before it are read"; }
    void warn(const std::string& text) { m_log.warnings.push_back(m_log.path + ": " + text); }

    std::string_view m_text;
    ScalarLog& m_log;
    int m_entriesRead = 0;
    std::map<std::string, std::map<std::string, int>> m_skippedValues; // key -> kind -> count
    std::vector<std::string> m_skippedTopLevelFields;
    bool m_anyStep = false;
    int64_t m_highestStep = 0;
    std::string m_firstStepBack; // where a resumed run starts writing steps again
    std::vector<JsonField> m_entry; // one entry's fields; its memory serves every entry
    // The series the field at each position of the last entry went to: entries repeat their keys
    // in one order, so each value finds its series without a lookup by name in the map.
    std::vector<std::pair<std::string, std::vector<ScalarPoint>*>> m_seriesAt;

    std::vector<ScalarPoint>& seriesFor(size_t position, const std::string& key)
    {
        if (position >= m_seriesAt.size())
            m_seriesAt.resize(position + 1);
        auto& [cachedKey, series] = m_seriesAt[position];
        if (!series || cachedKey != key) {
            cachedKey = key;
            series = &m_log.series[key]; // std::map: the vector stays where it is as keys are added
        }
        return *series;
    }
};

Status TrainerStateParser::parse()
{
    const std::string& path = m_log.path;
    size_t position = m_text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    position = skipWhitespace(m_text, position);
    if (position >= m_text.size())
        return Error { path + ": empty file; a trainer_state.json holds a JSON object" };
    if (m_text[position] != '{')
        return Error { path + ": not JSON: it begins with \"" + excerptAt(m_text, position)
            + "\" where a trainer_state.json's '{' should be (byte " + std::to_string(position) + ")" };
    ++position;

    bool sawLogHistory = false;
    std::string stoppedBy; // why the top-level object was not read to its end
    while (stoppedBy.empty()) {
        position = skipWhitespace(m_text, position);
        if (position >= m_text.size()) {
            stoppedBy = "the file ends (byte " + std::to_string(position) + ") inside the top-level object";
            break;
        }
        if (m_text[position] == '}')
            break;
        const ValueExtent keyExtent = jsonscan::scanValue(m_text, position);
        JsonField key;
        std::string keyError;
        if (m_text[position] != '"' || keyExtent.kind != ValueExtent::Kind::Complete
            || !json::readValue(m_text.substr(position, keyExtent.end - position), key, keyError)) {
            stoppedBy = "byte " + std::to_string(position) + ": no field name in quotes where one should be (\""
                + excerptAt(m_text, position) + "\")";
            break;
        }
        const std::string name = key.text;
        position = skipWhitespace(m_text, keyExtent.end);
        if (position >= m_text.size() || m_text[position] != ':') {
            stoppedBy = "byte " + std::to_string(position) + ": no ':' after the field name \"" + name + "\"";
            break;
        }
        position = skipWhitespace(m_text, position + 1);

        if (name == "log_history") {
            if (position >= m_text.size() || m_text[position] != '[')
                return Error { path + ": \"log_history\" (byte " + std::to_string(position)
                    + ") is not a list; not a Hugging Face trainer_state.json" };
            sawLogHistory = true;
            if (readLogHistory(position) == ListEnd::Stopped) {
                addNotes(); // the warning says where and why; what follows is not read
                return Status::success();
            }
        } else {
            const ValueExtent value = jsonscan::scanValue(m_text, position);
            if (value.kind != ValueExtent::Kind::Complete || value.end == position) {
                stoppedBy = "byte " + std::to_string(position) + ": the value of \"" + name + "\" is "
                    + (value.kind == ValueExtent::Kind::CutOff ? "cut off by the end of the file" : "damaged");
                break;
            }
            keepTopLevelField(name, m_text.substr(position, value.end - position), position);
            position = value.end;
        }

        position = skipWhitespace(m_text, position);
        if (position < m_text.size() && m_text[position] == ',')
            ++position;
        else if (position < m_text.size() && m_text[position] == '}')
            break;
        else
            stoppedBy = "byte " + std::to_string(position) + ": no ',' or '}' after the field \"" + name + "\"";
    }

    if (!sawLogHistory) {
        if (!stoppedBy.empty())
            return Error { path + ": " + stoppedBy + ", and no \"log_history\" comes before it" };
        return Error { path
            + ": no \"log_history\" list in the top-level object; not a Hugging Face trainer_state.json" };
    }
    if (!stoppedBy.empty())
        warn(stoppedBy + "; the top-level fields after it are not read");
    addNotes();
    return Status::success();
}

TrainerStateParser::ListEnd TrainerStateParser::readLogHistory(size_t& position)
{
    size_t cursor = skipWhitespace(m_text, position + 1);
    if (cursor < m_text.size() && m_text[cursor] == ']') {
        position = cursor + 1;
        m_log.notes.push_back("log_history is empty: no values were logged");
        return ListEnd::Closed;
    }
    for (int number = 1;; ++number) {
        cursor = skipWhitespace(m_text, cursor);
        // A valid entry is read in one pass that also finds its end; only a damaged one is cut out
        // by JsonScan first (that extra scan of every entry was an eighth of reading the log).
        size_t length = 0;
        ValueExtent extent;
        if (cursor < m_text.size() && m_text[cursor] == '{'
            && json::readLeadingObjectFields(m_text.substr(cursor), m_entry, length)) {
            readEntry(m_entry, number, cursor);
            extent.end = cursor + length;
        } else if (!readDamagedEntry(cursor, number, extent)) {
            return ListEnd::Stopped;
        }

        cursor = skipWhitespace(m_text, extent.end);
        if (cursor < m_text.size() && m_text[cursor] == ',') {
            ++cursor;
        } else if (cursor < m_text.size() && m_text[cursor] == ']') {
            position = cursor + 1;
            return ListEnd::Closed;
        } else {
            warn(std::string(cursor >= m_text.size() ? "the file ends" : "no ',' or ']'") + " at byte "
                + std::to_string(cursor) + ", after log_history entry " + std::to_string(number) + "; the "
                + std::to_string(m_entriesRead) + " entries up to it are read");
            return ListEnd::Stopped;
        }
    }
}

bool TrainerStateParser::readDamagedEntry(size_t cursor, int number, ValueExtent& extent)
{
    extent = jsonscan::scanValue(m_text, cursor);
    if (cursor >= m_text.size() || extent.kind == ValueExtent::Kind::CutOff) {
        warn(entryLabel(number, cursor) + ": cut off, the file ends "
            + (cursor >= m_text.size() ? "where it should start" : "inside it") + "; the " + entriesReadSoFar());
        return false;
    }
    if (extent.kind == ValueExtent::Kind::MismatchedBracket || extent.end == cursor) {
        warn(entryLabel(number, cursor) + ": damaged (a stray '" + std::string(1, m_text[extent.end]) + "' at byte "
            + std::to_string(extent.end) + "); the " + entriesReadSoFar() + ", the rest of the file is not");
        return false;
    }
    std::string error;
    if (json::readObjectFields(m_text.substr(cursor, extent.end - cursor), m_entry, error))
        readEntry(m_entry, number, cursor);
    else if (error == "not a JSON object")
        warn(entryLabel(number, cursor) + ": not a JSON object; this entry is skipped");
    else
        warn(entryLabel(number, cursor) + ": not valid JSON (" + error + "); this entry is skipped");
    return true;
}

void TrainerStateParser::readEntry(const std::vector<JsonField>& entry, int number, size_t byte)
{
    const JsonField* stepField = json::findField(entry, "step"sv);
    const double stepValue = stepField && stepField->kind == JsonField::Kind::Number ? stepField->number : NAN;
    if (!std::isfinite(stepValue) || stepValue != std::floor(stepValue) || std::fabs(stepValue) > 9.0e18) {
        warn(entryLabel(number, byte) + ": no whole-number \"step\"; this entry is skipped");
        return;
    }
    const auto step = static_cast<int64_t>(stepValue);
    ++m_entriesRead;

    const bool summary = isSummaryEntry(entry);
    for (size_t position = 0; position < entry.size(); ++position) {
        const JsonField& field = entry[position];
        const std::string& key = field.key;
        if (std::string_view(key) == "step"sv)
            continue;
        if (field.kind != JsonField::Kind::Number) {
            ++m_skippedValues[key][json::kindName(field.kind)];
            continue;
        }
        const double value = field.number;
        if (summary) {
            // The summary's epoch repeats the top-level one.
            if (std::string_view(key) != "epoch"sv)
                m_log.attributes[key] = formatNumber(value);
            continue;
        }
        std::vector<ScalarPoint>& series = seriesFor(position, key);
        if (std::string_view(key) == "epoch"sv) {
            // A train and an eval entry at one step both carry the epoch; one point says it.
            if (!series.empty() && series.back().step == step
                && (series.back().value == value || (std::isnan(series.back().value) && std::isnan(value))))
                continue;
        }
        series.push_back(ScalarPoint { step, value });
    }

    if (summary)
        return;
    if (m_anyStep && step < m_highestStep && m_firstStepBack.empty())
        m_firstStepBack = "at " + entryLabel(number, byte) + " the step goes back from " + std::to_string(m_highestStep)
            + " to " + std::to_string(step);
    m_highestStep = m_anyStep ? std::max(m_highestStep, step) : step;
    m_anyStep = true;
}

void TrainerStateParser::keepTopLevelField(const std::string& key, std::string_view raw, size_t byte)
{
    JsonField value;
    std::string error;
    if (!json::readValue(raw, value, error)) {
        warn("top-level field \"" + key + "\" (byte " + std::to_string(byte) + "): not valid JSON; skipped");
        return;
    }
    if (value.kind == JsonField::Kind::Text)
        m_log.attributes[key] = value.text;
    else if (value.kind == JsonField::Kind::Number)
        m_log.attributes[key] = std::string(raw); // as written: "5785036350898176.0", "NaN"
    else if (value.kind != JsonField::Kind::Null) // null means "not set" (best_metric before any eval)
        m_skippedTopLevelFields.push_back(key + " (" + json::kindName(value.kind) + ")");
}

void TrainerStateParser::addNotes()
{
    if (!m_skippedValues.empty()) {
        std::string note = "values that are not numbers are skipped:";
        for (const auto& [key, kinds] : m_skippedValues)
            for (const auto& [kind, count] : kinds)
                note += " " + key + " (" + std::to_string(count) + " " + kind + "),";
        note.back() = '.';
        m_log.notes.push_back(note);
        m_skippedValues.clear();
    }
    if (!m_skippedTopLevelFields.empty()) {
        std::string note = "top-level fields that are not numbers or text are not kept:";
        for (const std::string& field : m_skippedTopLevelFields)
            note += " " + field + ",";
        note.back() = '.';
        m_log.notes.push_back(note);
        m_skippedTopLevelFields.clear();
    }

    std::set<int64_t> repeatedSteps;
    for (const auto& [name, points] : m_log.series) {
        std::vector<int64_t> steps;
        steps.reserve(points.size());
        for (const ScalarPoint& point : points)
            steps.push_back(point.step);
        // A log's steps nearly always come in order: then the repeats are already side by side.
        if (!std::is_sorted(steps.begin(), steps.end()))
            std::sort(steps.begin(), steps.end());
        for (size_t i = 1; i < steps.size(); ++i)
            if (steps[i] == steps[i - 1])
                repeatedSteps.insert(steps[i]);
    }
    if (!repeatedSteps.empty() || !m_firstStepBack.empty()) {
        std::string note = std::to_string(repeatedSteps.size())
            + (repeatedSteps.size() == 1 ? " step is" : " steps are") + " logged more than once";
        if (!m_firstStepBack.empty())
            note += " (" + m_firstStepBack + ", as a resumed run writes them again)";
        m_log.notes.push_back(note + "; the points are kept in file order");
    }
}

} // namespace

Result<ScalarLog> readTrainerState(const std::string& path)
{
    Result<std::string> text = readFileText(path, kMaxTrainerStateBytes);
    if (!text)
        return Error { text.error() };
    ScalarLog log;
    log.path = path;
    log.format = kTrainerStateFormat;
    TrainerStateParser parser(*text, log);
    const Status parsed = parser.parse();
    if (!parsed)
        return Error { parsed.error() };
    const auto loggingSteps = log.attributes.find("logging_steps");
    if (loggingSteps == log.attributes.end() || trainerHidesNonfiniteLosses(loggingSteps->second, "true"))
        readHiddenNonfiniteLosses(log, "loss", "grad_norm");
    return log;
}

} // namespace nanscope
