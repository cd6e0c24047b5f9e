#include "core/importers/JsonLinesLogReader.h"

#include "core/importers/JsonFields.h"
#include "core/importers/RecordAssembler.h"
#include "core/importers/SkippedStepEvents.h"
#include "core/importers/TextPieces.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope {

namespace {

using json::JsonField;

constexpr const char* kKind = "JSON lines";
constexpr int kSniffLines = 20;

// The word of an object that says which phase wrote it: "val", "test", "eval"; empty for training.
std::string_view phaseOf(const std::vector<json::JsonFieldView>& fields)
{
    for (std::string_view key : {std::string_view("mode"), std::string_view("phase"), std::string_view("split")})
        for (const json::JsonFieldView& f : fields)
            if (f.key == key && f.kind == JsonField::Kind::Text && !f.text.empty() && f.text.size() < 32 &&
                f.text != "train" && f.text != "training")
                return f.text;
    return {};
}

class JsonLinesRecords
{
public:
    void line(std::string_view text)
    {
        ++m_lines;
        m_assembler.consumed(text.size() + 1);
        std::string error;
        if (text.find_first_not_of(" \t") == std::string_view::npos)
            return;
        if (!json::readPlainObjectFields(text, m_flat)) {
            if (!json::readFlattenedObjectFields(text, m_fields, error)) {
                if (m_notObjects++ == 0)
                    m_firstProblem = "line " + std::to_string(m_lines) + ": " + error;
                return;
            }
            m_flat.clear();
            for (const JsonField& f : m_fields)
                m_flat.push_back(json::JsonFieldView{f.key, f.kind, f.number, f.text});
        }
        ++m_objects;
        m_record.pairs.clear();
        const std::string_view phase = phaseOf(m_flat);
        m_prefixed.clear();
        m_prefixed.reserve(m_flat.size());
        double wallTime = std::numeric_limits<double>::quiet_NaN();
        for (const json::JsonFieldView& f : m_flat) {
            if (f.key.empty())
                continue;
            if (f.key == "_timestamp" && f.kind == JsonField::Kind::Number) {
                wallTime = f.number;
                continue;
            }
            if (f.key.front() == '_' && f.key != "_step")
                continue; // _runtime, _wandb: the logger's own
            if (f.kind != JsonField::Kind::Number && f.kind != JsonField::Kind::Null) {
                ++m_notNumbers;
                continue;
            }
            std::string_view name = f.key;
            // An evaluation's names, but not the step counter it shares with training.
            if (!phase.empty() && records::stepKeyRank(name) < 0 && !records::isEpochKey(name) &&
                name.substr(0, phase.size()) != phase) {
                m_prefixed.push_back(std::string(phase) + "/" + std::string(f.key));
                name = m_prefixed.back();
            }
            m_record.pairs.push_back(textrecord::Pair{name, f.number, f.kind == JsonField::Kind::Null});
        }
        if (!phase.empty()) {
            // Placed at the training step before it: its own counter counts the evaluation's batches.
            m_record.pairs.erase(std::remove_if(m_record.pairs.begin(), m_record.pairs.end(),
                                                [](const textrecord::Pair& p) {
                                                    return records::stepKeyRank(p.name) >= 0;
                                                }),
                                 m_record.pairs.end());
            m_record.indented = false;
        }
        m_assembler.take(m_record, wallTime);
    }

    RecordAssembler& assembler() { return m_assembler; }
    uint64_t lines() const { return m_lines; }
    uint64_t objects() const { return m_objects; }
    uint64_t notObjects() const { return m_notObjects; }
    uint64_t notNumbers() const { return m_notNumbers; }
    const std::string& firstProblem() const { return m_firstProblem; }

private:
    RecordAssembler m_assembler;
    textrecord::Segment m_record;
    std::vector<JsonField> m_fields;
    std::vector<json::JsonFieldView> m_flat;
    std::vector<std::string> m_prefixed;
    uint64_t m_lines = 0, m_objects = 0, m_notObjects = 0, m_notNumbers = 0;
    std::string m_firstProblem;
};

} // namespace

SniffVerdict sniffJsonLinesLog(const FilePrefix& file)
{
    const std::string_view head = file.head;
    const size_t first = head.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (first == std::string_view::npos || head[first] != '{')
        return {0, first != std::string_view::npos && head[first] == '['
                       ? "a JSON array, not one JSON object a line"
                       : "not JSON lines (it does not start with '{')"};
    JsonLinesRecords records;
    size_t at = first;
    int looked = 0;
    while (at < head.size() && looked < kSniffLines) {
        const size_t end = head.find('\n', at);
        if (end == std::string_view::npos && file.size > head.size())
            break; // cut by the prefix
        const std::string_view line = head.substr(at, end == std::string_view::npos ? end : end - at);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
            records.line(line);
            ++looked;
        }
        if (end == std::string_view::npos)
            break;
        at = end + 1;
    }
    if (records.objects() == 0)
        return {0, "JSON, but not one object a line (" + records.firstProblem() + ")"};
    if (records.notObjects() * 5 > records.objects())
        return {0, "JSON, but " + std::to_string(records.notObjects()) + " of its first " + std::to_string(looked) +
                       " lines are not objects (a JSON document over several lines, not JSON lines)"};
    if (records.objects() == 1 && looked == 1) {
        if (file.size > head.size())
            return {70, "JSON lines (only the first, of " + std::to_string(records.assembler().records()) +
                            " record, fits the first 256 KiB)"};
        return {0, "one JSON object (a summary or a configuration), not a log of one object a line"};
    }
    ScalarLog log;
    if (records.assembler().finish(log, kKind, 0, records.lines()) == 0)
        return {0, !records.assembler().refusal().empty() ? "JSON lines with " + records.assembler().refusal() : "JSON lines, but no name holds a number in " + std::to_string(RecordAssembler::kLeastRecords) +
                       " of its first lines"};
    return {85, log.notes.front()};
}

Result<ScalarLog> readJsonLinesLog(const std::string& path)
{
    JsonLinesRecords records;
    records.assembler().expectBytesOf(path);
    TextPieces pieces([&](std::string_view line) { records.line(line); });
    if (Status read = feedFile(path, pieces); !read)
        return Error{read.error()};
    ScalarLog log;
    log.path = path;
    log.format = "JSON lines log";
    const size_t series = records.assembler().finish(log, kKind, pieces.tooLong(), records.lines());
    if (records.notObjects() > 0)
        log.warnings.push_back(path + ": " + records::countText(records.notObjects()) +
                               " lines are not JSON objects and were skipped (the first, " + records.firstProblem() +
                               ")");
    if (records.notNumbers() > 0)
        log.notes.push_back(records::countText(records.notNumbers()) +
                            " values that are text, lists or objects are not series");
    if (series == 0)
        return Error{path + ": no series in its " + records::countText(records.lines()) + " lines (" +
                     records::countText(records.objects()) + " JSON objects; no name holds a number in " +
                     std::to_string(RecordAssembler::kLeastRecords) + " of them)"};
    addSkippedStepEvents(log);
    return log;
}

} // namespace nanscope
