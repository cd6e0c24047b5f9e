#include "core/importers/TextRecordLogReader.h"

#include "core/importers/RecordAssembler.h"
#include "core/importers/RecordSteps.h"
#include "core/importers/SkippedStepEvents.h"
#include "core/importers/TextPieces.h"


namespace nanscope {

namespace {

constexpr const char* kKind = "text records";

Result<ScalarLog> finishRead(const std::string& path, RecordAssembler& records, uint64_t tooLong)
{
    ScalarLog log;
    log.path = path;
    log.format = "text log (records of named values)";
    const size_t series = records.finish(log, kKind, tooLong);
    if (series == 0 && !records.refusal().empty())
        return Error{path + ": text with " + records.refusal()};
    if (series == 0)
        return Error{path + ": no training records: no name holds a number in " +
                     std::to_string(RecordAssembler::kLeastRecords) + " or more of its " +
                     records::countText(records.pieces()) + " lines"};
    addSkippedStepEvents(log);
    return log;
}

} // namespace

SniffVerdict sniffTextRecordLog(const FilePrefix& file)
{
    const std::string_view head = file.head;
    if (const size_t nul = firstNulByte(head); nul != std::string_view::npos)
        return {0, "binary data (a NUL byte at byte " + std::to_string(nul) + ")"};
    RecordAssembler records;
    records.readsFreeText();
    TextPieces pieces([&](std::string_view piece) { records.piece(piece); });
    // The last piece of a cut prefix may be cut too: left out.
    const size_t lastBreak = head.find_last_of("\r\n");
    pieces.feed(file.size > head.size() && lastBreak != std::string_view::npos ? head.substr(0, lastBreak + 1) : head);
    pieces.finish();
    if (records.binaryPieces() * 10 > records.pieces() + 10)
        return {0, "binary data (control characters in " + records::countText(records.binaryPieces()) + " of " +
                       records::countText(records.pieces()) + " lines)"};
    ScalarLog log;
    if (records.finish(log, kKind) == 0)
        return {0, !records.refusal().empty() ? "text with " + records.refusal() : "text, but no name holds a number in " + std::to_string(RecordAssembler::kLeastRecords) +
                       " or more of its first " + records::countText(records.pieces()) + " lines"};
    // A general syntax: below every format-specific reader, surer when a step is logged.
    return {records.stepLogged() ? 60 : 45, log.notes.front()};
}

Result<ScalarLog> readTextRecordLog(const std::string& path)
{
    RecordAssembler records;
    records.readsFreeText();
    records.expectBytesOf(path);
    TextPieces pieces([&](std::string_view piece) { records.piece(piece); });
    if (Status read = feedFile(path, pieces); !read)
        return Error{read.error()};
    return finishRead(path, records, pieces.tooLong());
}

} // namespace nanscope
