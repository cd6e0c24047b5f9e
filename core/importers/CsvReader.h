#pragma once

// Comma-separated values as RFC 4180 defines them: fields in double quotes may hold commas, line
// breaks and quotes (written twice); records end with CRLF or LF (or a lone CR); a UTF-8 byte-order
// mark is dropped; the last record needs no line break. What the RFC forbids is read the way
// spreadsheet programs read it and reported, never fatal: a file with damage is still a table.

#include "core/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

struct CsvRecord {
    int64_t line = 0; // where the record starts, from 1 (a quoted field may carry it over lines)
    std::vector<std::string> fields;
};

struct CsvProblem {
    enum class Kind {
        RaggedRecord, // more or fewer fields than the header
        StrayQuote, // a quote inside an unquoted field, or text after a closing quote: kept as text
        UnclosedQuote, // the text ends inside a quoted field: the record is kept as read
    };
    Kind kind = Kind::RaggedRecord;
    int64_t line = 0;
    std::string message; // "line 7: 5 fields where the header has 7"
};

struct CsvTable {
    std::vector<std::string> header; // the first record; empty for an empty text
    std::vector<CsvRecord> rows; // the records after it; lines with nothing on them are skipped
    std::vector<CsvProblem> problems; // the first 1000, in the order of the text
    int64_t problemsNotListed = 0;
    // False when the last record has no line break after it: the RFC allows that, but it is also
    // what a file cut off, or still being written, looks like.
    bool endsWithLineBreak = true;
};

CsvTable parseCsv(std::string_view text);

// Error names the file when it cannot be read; damage inside it is in the table's problems.
Result<CsvTable> readCsvFile(const std::string& path, uint64_t maxBytes = uint64_t(1) << 30);

} // namespace nanscope
