#include "core/importers/MetricsCsvReader.h"

#include "core/importers/CsvReader.h"
#include "core/importers/FileText.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace nanscope {

namespace {

constexpr uint64_t kMaxMetricsCsvBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxHparamsBytes = uint64_t(1) << 20;
// Past these, a warning gives counts instead of one line per row: a file whose every row is damaged
// says so in a few lines.
constexpr size_t kMaxListedRaggedRows = 20;
constexpr size_t kMaxListedLines = 5;
// Steps past this are no step counter; the bound also keeps the per-epoch offsets from overflowing.
constexpr int64_t kMaxStep = int64_t(1) << 50;

std::string_view trimmed(std::string_view text)
{
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

// Locale-independent (a Qt application runs under the user's locale, where strtod may want "1,5").
// Accepts what Python writes for floats: "0.25", "1e-05", "nan", "inf", "-inf", and "Infinity".
bool parseNumber(std::string_view cell, double& value)
{
    if (!cell.empty() && cell.front() == '+') {
        cell.remove_prefix(1);
        if (cell.empty() || cell.front() == '-' || cell.front() == '+')
            return false;
    }
    if (cell.empty())
        return false;
    const char* end = cell.data() + cell.size();
    const std::from_chars_result parsed = std::from_chars(cell.data(), end, value);
    if (parsed.ptr != end)
        return false;
    if (parsed.ec == std::errc::result_out_of_range) {
        // Beyond double's range: an exponent below it is a zero, one above it an infinity.
        const bool negative = cell.front() == '-';
        const size_t exponent = cell.find_first_of("eE");
        const bool tiny = exponent != std::string_view::npos && exponent + 1 < cell.size() && cell[exponent + 1] == '-';
        value = tiny ? (negative ? -0.0 : 0.0)
                     : (negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
        return true;
    }
    return parsed.ec == std::errc();
}

// "49", and "49.0" as a float column written by pandas would have it.
bool parseStep(std::string_view cell, int64_t& step)
{
    const char* end = cell.data() + cell.size();
    const std::from_chars_result parsed = std::from_chars(cell.data(), end, step);
    if (parsed.ec == std::errc() && parsed.ptr == end)
        return step >= -kMaxStep && step <= kMaxStep;
    double number = 0;
    if (!parseNumber(cell, number) || !std::isfinite(number) || number != std::floor(number)
        || std::fabs(number) > double(kMaxStep))
        return false;
    step = static_cast<int64_t>(number);
    return true;
}

std::string countOf(int64_t count, const char* one, const char* many)
{
    return std::to_string(count) + " " + (count == 1 ? one : many);
}

bool sameValue(double a, double b)
{
    return a == b || (std::isnan(a) && std::isnan(b));
}

// Cells or rows skipped for one reason: how many, and the first few lines, to name in a warning.
struct SkippedCells {
    int64_t count = 0;
    std::vector<int64_t> lines;
    std::string firstCell;

    void add(int64_t line, std::string_view cell)
    {
        if (count++ == 0)
            firstCell = std::string(cell.substr(0, 40));
        if (lines.size() < kMaxListedLines)
            lines.push_back(line);
    }
    std::string describe() const
    {
        std::string text = lines.size() == 1 ? "line " : "lines ";
        for (size_t i = 0; i < lines.size(); ++i)
            text += (i ? ", " : "") + std::to_string(lines[i]);
        if (count > int64_t(lines.size()))
            text += " and " + std::to_string(count - int64_t(lines.size())) + " more";
        return text + "; the first reads \"" + firstCell + "\"";
    }
};

// Makes steps go forward where the logger counted them from 0 in each epoch, and notices the step
// going back without a new epoch (a run resumed from an earlier checkpoint), which is left as it is.
class StepContinuity {
public:
    int64_t map(int64_t rawStep, std::optional<double> epoch, int64_t line)
    {
        if (m_any && rawStep < m_previousRaw) {
            const std::string where = "line " + std::to_string(line) + ": step " + std::to_string(rawStep) + " after "
                + std::to_string(m_previousRaw);
            if (epoch && m_previousEpoch && *epoch > *m_previousEpoch) {
                if (m_restarts++ == 0)
                    m_firstRestart = where + ", as the epoch goes from " + formatEpoch(*m_previousEpoch) + " to "
                        + formatEpoch(*epoch);
                m_offset += m_segmentLast + 1;
                m_segmentLast = rawStep;
            } else if (m_backJumps++ == 0) {
                m_firstBackJump = where;
            }
        }
        m_segmentLast = m_any ? std::max(m_segmentLast, rawStep) : rawStep;
        m_previousRaw = rawStep;
        if (epoch)
            m_previousEpoch = epoch;
        m_any = true;
        return rawStep + m_offset;
    }

    void addNotes(ScalarLog& log) const
    {
        if (m_restarts > 0)
            log.notes.push_back("the step count starts again in " + countOf(m_restarts, "new epoch", "new epochs")
                + " (first at " + m_firstRestart
                + "); their steps are offset to follow the previous epoch's last step + 1");
        if (m_backJumps > 0)
            log.notes.push_back("the step goes back " + countOf(m_backJumps, "time", "times")
                + " without a new epoch (first at " + m_firstBackJump
                + "), as a resumed run does; those steps are logged twice and kept in file order");
    }

private:
    static std::string formatEpoch(double epoch)
    {
        char buffer[32];
        return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, epoch).ptr);
    }

    bool m_any = false;
    int64_t m_previousRaw = 0;
    std::optional<double> m_previousEpoch;
    int64_t m_segmentLast = 0; // the highest step since the count last started again
    int64_t m_offset = 0;
    int m_restarts = 0, m_backJumps = 0;
    std::string m_firstRestart, m_firstBackJump;
};

// Lightning writes the module's hyperparameters beside metrics.csv. Only top-level `key: value`
// lines are read: this is no YAML parser, and nested values are not run-level facts the views show.
void readHparamsBeside(const std::string& csvPath, ScalarLog& log)
{
    namespace fs = std::filesystem;
    const fs::path hparamsPath = fs::path(csvPath).parent_path() / "hparams.yaml";
    std::error_code error;
    if (!fs::is_regular_file(hparamsPath, error))
        return;
    const Result<std::string> text = readFileText(hparamsPath.string(), kMaxHparamsBytes);
    if (!text) {
        log.notes.push_back("hparams.yaml beside it is not read: " + text.error());
        return;
    }
    int settingsRead = 0, linesNotRead = 0;
    std::string_view rest = *text;
    while (!rest.empty()) {
        const size_t lineEnd = rest.find('\n');
        std::string_view line = rest.substr(0, lineEnd);
        rest.remove_prefix(lineEnd == std::string_view::npos ? rest.size() : lineEnd + 1);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        const std::string_view content = trimmed(line);
        if (content.empty() || content.front() == '#' || content == "---" || content == "{}")
            continue;
        const size_t colon = line.find(": ");
        if (line.front() == ' ' || line.front() == '\t' || line.front() == '-' || colon == std::string_view::npos) {
            ++linesNotRead;
            continue;
        }
        std::string_view value = trimmed(line.substr(colon + 2));
        if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        log.attributes[std::string(trimmed(line.substr(0, colon)))] = std::string(value);
        ++settingsRead;
    }
    if (settingsRead > 0 || linesNotRead > 0)
        log.notes.push_back("hparams.yaml beside it: " + std::to_string(settingsRead) + " settings read as attributes"
            + (linesNotRead > 0
                    ? ", " + std::to_string(linesNotRead) + " lines that are not a top-level `key: value` are not"
                    : std::string()));
}

} // namespace

namespace {

// The header's columns: their names, which hold metrics, and which are the step and the epoch. A
// nameless or repeated column cannot be given a series name (`warn` says so).
struct MetricsColumns
{
    std::vector<std::string> names;
    std::vector<bool> isMetric;
    std::optional<size_t> stepColumn, epochColumn;
};

MetricsColumns readHeader(const CsvTable& table, const std::function<void(const std::string&)>& warn)
{
    MetricsColumns columns;
    const size_t columnCount = table.header.size();
    columns.isMetric.assign(columnCount, false);
    columns.names.resize(columnCount);
    std::map<std::string_view, size_t> columnByName;
    for (size_t column = 0; column < columnCount; ++column) {
        columns.names[column] = std::string(trimmed(table.header[column]));
        const std::string_view name = columns.names[column];
        const std::string label = "column " + std::to_string(column + 1);
        if (name.empty()) {
            warn(label + " has no name in the header; its cells are not read");
        } else if (const auto earlier = columnByName.find(name); earlier != columnByName.end()) {
            warn(label + " repeats the name \"" + std::string(name) + "\" of column "
                + std::to_string(earlier->second + 1) + "; its cells are not read");
        } else {
            columnByName.emplace(name, column);
            if (name == "step")
                columns.stepColumn = column;
            else
                columns.isMetric[column] = true;
            if (name == "epoch")
                columns.epochColumn = column;
        }
    }
    return columns;
}

// The CSV reader's problems with quotes (ragged rows are said per row, where they are read).
void warnQuoteProblems(const CsvTable& table, const std::function<void(const std::string&)>& warn)
{
    for (const CsvProblem& problem : table.problems)
        if (problem.kind != CsvProblem::Kind::RaggedRecord)
            warn(problem.message);
    if (table.problemsNotListed > 0)
        warn(std::to_string(table.problemsNotListed) + " more problems with quotes are not listed");
}

} // namespace

Result<ScalarLog> readMetricsCsv(const std::string& path)
{
    const Result<std::string> text = readFileText(path, kMaxMetricsCsvBytes);
    if (!text)
        return Error { text.error() };
    const size_t nul = text->find('\0');
    if (nul != std::string::npos)
        return Error { path + ": binary data (a zero byte at byte " + std::to_string(nul) + "); not a CSV file" };
    const CsvTable table = parseCsv(*text);
    if (table.header.empty())
        return Error { path + ": empty; a metrics.csv starts with a header line naming its columns" };

    ScalarLog log;
    log.path = path;
    log.format = kMetricsCsvFormat;
    const auto warn = [&log](const std::string& what) { log.warnings.push_back(log.path + ": " + what); };

    const size_t columnCount = table.header.size();
    const MetricsColumns header = readHeader(table, warn);
    const std::vector<std::string>& names = header.names;
    const std::vector<bool>& isMetric = header.isMetric;
    const std::optional<size_t> stepColumn = header.stepColumn, epochColumn = header.epochColumn;
    if (!stepColumn)
        warn("no \"step\" column; each row's place among the rows (from 0) is used as its step");

    warnQuoteProblems(table, warn);

    StepContinuity continuity;
    SkippedCells rowsWithoutStep;
    std::vector<SkippedCells> notNumbers(columnCount);
    std::vector<int64_t> valuesInColumn(columnCount, 0);
    size_t raggedRows = 0;
    for (size_t rowIndex = 0; rowIndex < table.rows.size(); ++rowIndex) {
        const CsvRecord& row = table.rows[rowIndex];
        const std::string line = "line " + std::to_string(row.line);
        const std::string fieldCount
            = std::to_string(row.fields.size()) + " fields where the header has " + std::to_string(columnCount);
        size_t usableFields = row.fields.size();
        // Python's csv module ends every row with a line break, so a last row without one is a file
        // cut off or still being written: its last field may have lost characters ("21" read as "2").
        const bool cutOffLastRow = rowIndex + 1 == table.rows.size() && !table.endsWithLineBreak;
        if (cutOffLastRow && usableFields <= columnCount) {
            warn(line + ": the file ends inside this row" + (usableFields < columnCount ? " (" + fieldCount + ")" : "")
                + ", as a file cut off or still being written does; its last field, which may be cut short, is not "
                  "used");
            --usableFields; // never below 0: a record has at least one field
        } else if (usableFields != columnCount && ++raggedRows <= kMaxListedRaggedRows) {
            warn(line + ": " + fieldCount + "; "
                + (usableFields > columnCount
                        ? "the row is skipped, as which field is extra cannot be told"
                        : "its fields fill the columns from the left, the rest are read as empty"));
        }
        if (usableFields > columnCount)
            continue;

        int64_t rawStep = int64_t(rowIndex);
        if (stepColumn) {
            const std::string_view cell = *stepColumn < usableFields ? trimmed(row.fields[*stepColumn]) : "";
            if (!parseStep(cell, rawStep)) {
                if (!cutOffLastRow) // whose warning already says why
                    rowsWithoutStep.add(row.line, cell);
                continue;
            }
        }
        std::optional<double> epoch;
        double epochValue = 0;
        if (epochColumn && *epochColumn < usableFields && parseNumber(trimmed(row.fields[*epochColumn]), epochValue)
            && std::isfinite(epochValue))
            epoch = epochValue;
        const int64_t step = continuity.map(rawStep, epoch, row.line);

        for (size_t column = 0; column < usableFields; ++column) {
            const std::string_view cell = trimmed(row.fields[column]);
            if (!isMetric[column] || cell.empty())
                continue;
            double value = 0;
            if (!parseNumber(cell, value)) {
                notNumbers[column].add(row.line, cell);
                continue;
            }
            std::vector<ScalarPoint>& points = log.series[names[column]];
            // A train row and a validation row at one step both carry the epoch; one point says it.
            if (column == epochColumn && !points.empty() && points.back().step == step
                && sameValue(points.back().value, value))
                continue;
            points.push_back(ScalarPoint { step, value });
            ++valuesInColumn[column];
        }
    }

    // Some other text file: saying so beats an empty run with a warning per line.
    if (!stepColumn && log.series.empty() && !table.rows.empty())
        return Error { path
            + ": not a Lightning metrics.csv: no \"step\" column and no column of numbers (the header "
              "reads \""
            + std::string(table.header.front().substr(0, 40)) + "\")" };
    if (raggedRows > kMaxListedRaggedRows)
        warn(std::to_string(raggedRows - kMaxListedRaggedRows)
            + " more rows with more or fewer fields than the header are read the same way and not listed");
    if (rowsWithoutStep.count > 0)
        warn(countOf(rowsWithoutStep.count, "row has", "rows have") + " no whole-number \"step\" ("
            + rowsWithoutStep.describe() + "); they are skipped");
    std::string emptyColumns;
    for (size_t column = 0; column < columnCount; ++column) {
        if (notNumbers[column].count > 0)
            warn("column \"" + names[column] + "\" (column " + std::to_string(column + 1)
                + "): " + countOf(notNumbers[column].count, "cell is not a number", "cells are not numbers") + " ("
                + notNumbers[column].describe() + "); they are skipped");
        if (isMetric[column] && valuesInColumn[column] == 0)
            emptyColumns += (emptyColumns.empty() ? "" : ", ") + names[column];
    }
    if (!emptyColumns.empty())
        log.notes.push_back("columns with no value in any row: " + emptyColumns);
    if (table.rows.empty())
        log.notes.push_back("no rows after the header: nothing was logged yet");
    continuity.addNotes(log);
    readHparamsBeside(path, log);
    return log;
}

} // namespace nanscope
