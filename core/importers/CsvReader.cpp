#include "core/importers/CsvReader.h"

#include "core/importers/FileText.h"

namespace nanscope {

namespace {

// Enough to say what is wrong; a binary file read as CSV would otherwise list a problem per byte.
constexpr size_t kMaxListedProblems = 1000;

class CsvParser {
public:
    explicit CsvParser(std::string_view text)
        : m_text(text)
    {
    }

    CsvTable parse()
    {
        size_t i = m_text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
        m_recordStart = i;
        while (i < m_text.size()) {
            const char c = m_text[i];
            if (m_state == State::Quoted) {
                if (c == '"' && i + 1 < m_text.size() && m_text[i + 1] == '"') {
                    m_field += '"';
                    i += 2;
                    continue;
                }
                if (c == '"')
                    m_state = State::AfterQuoted;
                else
                    m_field += c;
                if (isLineBreak(i))
                    ++m_line;
                ++i;
                continue;
            }
            if (c == ',') {
                endField();
                ++i;
                continue;
            }
            if (c == '\r' || c == '\n') {
                const bool blankLine = i == m_recordStart;
                endField();
                endRecord(blankLine);
                i += (c == '\r' && i + 1 < m_text.size() && m_text[i + 1] == '\n') ? 2 : 1;
                ++m_line;
                m_recordStart = i;
                m_recordLine = m_line;
                continue;
            }
            if (c == '"' && m_state == State::FieldStart) {
                m_state = State::Quoted;
                ++i;
                continue;
            }
            if (c == '"' || m_state == State::AfterQuoted)
                report(CsvProblem::Kind::StrayQuote,
                    c == '"' ? "a quote inside a field that does not start with one; kept as text"
                             : "text after a field's closing quote; kept as part of the field");
            m_state = State::Unquoted;
            m_field += c;
            ++i;
        }

        if (m_state == State::Quoted)
            report(CsvProblem::Kind::UnclosedQuote,
                "a quoted field is still open at the end of the text; the record is kept as read", m_recordLine);
        if (m_recordStart < m_text.size()) {
            endField();
            endRecord(false);
            m_table.endsWithLineBreak = false;
        }
        return std::move(m_table);
    }

private:
    enum class State { FieldStart, Unquoted, Quoted, AfterQuoted };

    // A line break as the line count sees it: LF, CRLF (counted at its LF) or a lone CR.
    bool isLineBreak(size_t i) const
    {
        return m_text[i] == '\n' || (m_text[i] == '\r' && (i + 1 >= m_text.size() || m_text[i + 1] != '\n'));
    }

    void endField()
    {
        m_fields.push_back(std::move(m_field));
        m_field.clear();
        m_state = State::FieldStart;
    }

    void endRecord(bool blankLine)
    {
        std::vector<std::string> fields = std::move(m_fields);
        m_fields.clear();
        if (blankLine)
            return;
        if (!m_haveHeader) {
            m_table.header = std::move(fields);
            m_haveHeader = true;
            return;
        }
        if (fields.size() != m_table.header.size())
            report(CsvProblem::Kind::RaggedRecord,
                std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") + " where the header has "
                    + std::to_string(m_table.header.size()),
                m_recordLine);
        m_table.rows.push_back(CsvRecord { m_recordLine, std::move(fields) });
    }

    void report(CsvProblem::Kind kind, const std::string& what, int64_t line = 0)
    {
        if (m_table.problems.size() >= kMaxListedProblems) {
            ++m_table.problemsNotListed;
            return;
        }
        if (line == 0)
            line = m_line;
        m_table.problems.push_back(CsvProblem { kind, line, "line " + std::to_string(line) + ": " + what });
    }

    std::string_view m_text;
    CsvTable m_table;
    State m_state = State::FieldStart;
    std::string m_field;
    std::vector<std::string> m_fields;
    bool m_haveHeader = false;
    size_t m_recordStart = 0; // where the record being read starts in the text
    int64_t m_line = 1;
    int64_t m_recordLine = 1;
};

} // namespace

CsvTable parseCsv(std::string_view text)
{
    return CsvParser(text).parse();
}

Result<CsvTable> readCsvFile(const std::string& path, uint64_t maxBytes)
{
    Result<std::string> text = readFileText(path, maxBytes);
    if (!text)
        return Error { text.error() };
    return parseCsv(*text);
}

} // namespace nanscope
