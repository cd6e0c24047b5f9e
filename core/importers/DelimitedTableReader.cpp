#include "core/importers/DelimitedTableReader.h"

#include "core/importers/RecordAssembler.h"
#include "core/importers/SkippedStepEvents.h"
#include "core/importers/TextPieces.h"
#include "core/importers/DecimalText.h"
#include "core/importers/TextRecords.h"

#include <charconv>
#include <fstream>
#include <cmath>
#include <limits>

namespace nanscope {

namespace {

constexpr const char* kKind = "table rows";
constexpr int kSniffRows = 50;

// A cell without its padding and quotes.
std::string_view cellText(std::string_view text)
{
    return trimmed(text, " \t\"'");
}

// The cells of one row: split at the delimiter outside double quotes.
void splitRow(std::string_view row, char delimiter, std::vector<std::string_view>& cells)
{
    cells.clear();
    bool quoted = false;
    size_t start = 0;
    for (size_t i = 0; i < row.size(); ++i) {
        if (row[i] == '"')
            quoted = !quoted;
        else if (row[i] == delimiter && !quoted) {
            cells.push_back(cellText(row.substr(start, i - start)));
            start = i + 1;
        }
    }
    cells.push_back(cellText(row.substr(start)));
}

enum class Cell { Empty, Number, Text };

// A cell's number through the one number reader of the text logs (textrecord::readNumber: NaN,
// Inf and their spellings included), whole or not at all.
Cell readCell(std::string_view cell, double& value)
{
    if (cell.empty())
        return Cell::Empty;
    std::string_view t = cell;
    if (t.front() == '+')
        t.remove_prefix(1);
    if (!t.empty() && textrecord::readNumber(t.data(), t.data() + t.size(), value) == t.data() + t.size())
        return Cell::Number;
    if (t == "None" || t == "null" || t == "NULL")
        return Cell::Empty;
    return Cell::Text;
}

class TableRecords
{
public:
    explicit TableRecords(char delimiter)
        : m_delimiter(delimiter)
    {
    }

    void row(std::string_view text)
    {
        ++m_rows;
        m_assembler.consumed(text.size() + 1);
        splitRow(text, m_delimiter, m_cells);
        if (m_header.empty()) {
            for (std::string_view cell : m_cells)
                m_header.emplace_back(cell);
            return;
        }
        if (m_cells.size() != m_header.size())
            ++m_ragged;
        m_record.pairs.clear();
        size_t numbers = 0;
        for (size_t i = 0; i < m_cells.size() && i < m_header.size(); ++i) {
            double value = 0;
            switch (readCell(m_cells[i], value)) {
            case Cell::Number:
                if (!m_header[i].empty()) {
                    m_record.pairs.push_back(textrecord::Pair{m_header[i], value, false});
                    ++numbers;
                }
                break;
            case Cell::Text:
                ++m_textCells;
                break;
            case Cell::Empty:
                break;
            }
        }
        if (numbers > 0)
            m_assembler.take(m_record);
    }

    RecordAssembler& assembler() { return m_assembler; }
    const std::vector<std::string>& header() const { return m_header; }
    uint64_t rows() const { return m_rows; }
    uint64_t ragged() const { return m_ragged; }
    uint64_t textCells() const { return m_textCells; }

private:
    char m_delimiter;
    RecordAssembler m_assembler;
    textrecord::Segment m_record;
    std::vector<std::string> m_header;
    std::vector<std::string_view> m_cells;
    uint64_t m_rows = 0, m_ragged = 0, m_textCells = 0;
};

// The delimiter that cuts the first rows into the same number of cells (two or more), or 0.
char sniffDelimiter(std::string_view head, std::string& why)
{
    std::vector<std::string_view> lines;
    size_t at = 0;
    while (at < head.size() && lines.size() < kSniffRows) {
        const size_t end = head.find('\n', at);
        if (end == std::string_view::npos)
            break;
        std::string_view line = head.substr(at, end - at);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (!trimmed(line).empty())
            lines.push_back(line);
        at = end + 1;
    }
    if (lines.size() < 2) {
        why = "fewer than two complete lines";
        return 0;
    }
    std::vector<std::string_view> cells;
    for (char delimiter : {',', '\t', ';'}) {
        splitRow(lines[0], delimiter, cells);
        const size_t width = cells.size();
        if (width < 2)
            continue;
        size_t same = 0;
        for (size_t i = 1; i < lines.size(); ++i) {
            splitRow(lines[i], delimiter, cells);
            same += cells.size() == width;
        }
        if (same * 10 >= (lines.size() - 1) * 9)
            return delimiter;
    }
    why = "no delimiter (comma, tab or semicolon) cuts its first lines into the same number of cells";
    return 0;
}

std::string delimiterName(char delimiter)
{
    return delimiter == ',' ? "comma" : delimiter == '\t' ? "tab" : "semicolon";
}

} // namespace

SniffVerdict sniffDelimitedTable(const FilePrefix& file)
{
    const std::string_view head = file.head;
    if (firstNulByte(head) != std::string_view::npos)
        return {0, "binary data"};
    std::string why;
    const char delimiter = sniffDelimiter(head, why);
    if (!delimiter)
        return {0, "not a table: " + why};
    TableRecords records(delimiter);
    TextPieces pieces([&](std::string_view row) { records.row(row); });
    const size_t lastBreak = head.find_last_of('\n');
    pieces.feed(file.size > head.size() ? head.substr(0, lastBreak + 1) : head);
    pieces.finish();
    // A header of names: a table whose first row is numbers has none.
    size_t numericHeader = 0;
    for (const std::string& name : records.header()) {
        double value = 0;
        numericHeader += readCell(name, value) == Cell::Number;
    }
    if (numericHeader * 2 > records.header().size())
        return {0, "a table with no header of names (its first row is numbers)"};
    ScalarLog log;
    if (records.assembler().finish(log, kKind, 0, records.rows()) == 0)
        return {0, !records.assembler().refusal().empty() ? "a table with " + records.assembler().refusal() : "a " + delimiterName(delimiter) + "-separated table, but no column holds numbers in " +
                       std::to_string(RecordAssembler::kLeastRecords) + " rows"};
    // Below JSON lines: many a text log has commas too, so a table must also look like one.
    const bool tableName = file.extension == ".csv" || file.extension == ".tsv";
    return {tableName ? 80 : 55, delimiterName(delimiter) + "-separated " + log.notes.front()};
}

Result<ScalarLog> readDelimitedTable(const std::string& path)
{
    FilePrefix prefix;
    std::string why;
    {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return Error{path + ": cannot be read"};
        prefix.head.resize(kSniffBytes);
        in.read(prefix.head.data(), std::streamsize(prefix.head.size()));
        prefix.head.resize(size_t(in.gcount()));
    }
    const char delimiter = sniffDelimiter(prefix.head, why);
    if (!delimiter)
        return Error{path + ": not a table: " + why};
    TableRecords records(delimiter);
    records.assembler().expectBytesOf(path);
    TextPieces pieces([&](std::string_view row) { records.row(row); });
    if (Status read = feedFile(path, pieces); !read)
        return Error{read.error()};
    ScalarLog log;
    log.path = path;
    log.format = "table (" + delimiterName(delimiter) + "-separated)";
    const size_t series = records.assembler().finish(log, kKind, pieces.tooLong(), records.rows());
    if (records.ragged() > 0)
        log.warnings.push_back(path + ": " + records::countText(records.ragged()) +
                               " rows with more or fewer cells than the header; read as far as they go");
    if (records.textCells() > 0)
        log.notes.push_back(records::countText(records.textCells()) + " cells of text are not values");
    if (series == 0)
        return Error{path + ": a table, but no column holds numbers in " +
                     std::to_string(RecordAssembler::kLeastRecords) + " rows"};
    addSkippedStepEvents(log);
    return log;
}

} // namespace nanscope
