#include "core/importers/WandbRecordReader.h"

#include "core/importers/LoggedStepSeries.h"
#include "core/importers/TrainerHiddenNonfiniteLoss.h"
#include "core/importers/JsonFields.h"
#include "core/importers/RecordSteps.h"
#include "core/importers/SkippedStepEvents.h"

#include "wandb_records.pb.h"

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

namespace nanscope {

namespace {

constexpr std::string_view kMagic(":W&B\xE1\xBE\x00", 7);
constexpr size_t kHeaderBytes = 7;
constexpr size_t kBlockBytes = 32768;
constexpr size_t kFragmentHeaderBytes = 7;
constexpr uint64_t kMostRecordBytes = uint64_t(64) << 20; // one history row; more is damage
constexpr size_t kMostWarnings = 20;
constexpr size_t kMostConfigText = 200;

enum FragmentType : uint8_t { kZero = 0, kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

uint32_t readLe32(const char* p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = (v << 8) | uint8_t(p[i]);
    return v;
}

uint16_t readLe16(const char* p)
{
    return uint16_t(uint8_t(p[0]) | (uint8_t(p[1]) << 8));
}

uint32_t fragmentChecksum(uint8_t type, std::string_view data)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    const Bytef typeByte = type;
    crc = crc32(crc, &typeByte, 1);
    // zlib's length is a uInt: fragments are at most a block long.
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size()));
    return uint32_t(crc);
}

struct Damage
{
    uint64_t record = 0; // which record, from 1: the records before it were read
    uint64_t offset = 0;
    std::string what;
};

// Reads `size` bytes at `offset` into `out` (fewer at the end of the file).
using ReadAt = std::function<void(uint64_t offset, size_t size, std::string& out)>;

// The records of the file, by LevelDB's log framing with blocks counted from `blockBase`, read one
// block at a time (a fragment never crosses a block): memory holds a block and the record being
// assembled, whatever the file's size. `onRecord(offset, bytes)` gets each whole record. Returns
// false when the framing does not fit at all (a fragment crossing a block end before any record
// was read): the other block base.
template<typename OnRecord>
bool readFraming(const ReadAt& readAt, uint64_t fileSize, size_t blockBase, OnRecord&& onRecord,
                 std::vector<Damage>& damage, bool& cut, uint64_t& cutRecord)
{
    std::string block, pending;
    uint64_t pendingOffset = 0;
    bool inRecord = false;
    uint64_t records = 0;
    bool ended = false;
    for (uint64_t blockStart = blockBase == 0 ? 0 : kHeaderBytes; blockStart < fileSize && !ended;
         blockStart += kBlockBytes) {
        readAt(blockStart, size_t(std::min<uint64_t>(kBlockBytes, fileSize - blockStart)), block);
        size_t pos = blockStart == 0 ? kHeaderBytes : 0;
        while (pos < block.size()) {
            const size_t left = kBlockBytes - pos;
            if (left < kFragmentHeaderBytes)
                break; // the block's padding
            if (pos + kFragmentHeaderBytes > block.size()) {
                cut = ended = true;
                break;
            }
            const char* h = block.data() + pos;
            const uint32_t checksum = readLe32(h);
            const uint16_t length = readLe16(h + 4);
            const uint8_t type = uint8_t(h[6]);
            const uint64_t fragmentAt = blockStart + pos;
            if (checksum == 0 && length == 0 && type == kZero)
                break; // a zeroed rest of block (preallocated)
            if (kFragmentHeaderBytes + length > left) {
                if (records == 0 && damage.empty())
                    return false;
                damage.push_back(
                    {records + 1, fragmentAt, "a fragment longer than its block (" + std::to_string(length) + " bytes)"});
                inRecord = false;
                break;
            }
            if (pos + kFragmentHeaderBytes + length > block.size()) {
                cut = ended = true;
                break;
            }
            const std::string_view data(block.data() + pos + kFragmentHeaderBytes, length);
            if (fragmentChecksum(type, data) != checksum) {
                damage.push_back({records + 1, fragmentAt, "CRC-32 mismatch"});
                // The rest of this block cannot be trusted; the next block starts afresh.
                inRecord = false;
                pending.clear();
                break;
            }
            pos += kFragmentHeaderBytes + length;
            bool nextBlock = false;
            switch (type) {
            case kFull:
                if (inRecord)
                    damage.push_back({records + 1, pendingOffset, "a record whose last fragment is missing"});
                inRecord = false;
                ++records;
                onRecord(fragmentAt, data);
                break;
            case kFirst:
                if (inRecord)
                    damage.push_back({records + 1, pendingOffset, "a record whose last fragment is missing"});
                pending.assign(data);
                pendingOffset = fragmentAt;
                inRecord = true;
                break;
            case kMiddle:
            case kLast:
                if (!inRecord) {
                    damage.push_back({records + 1, fragmentAt, "a record's later fragment without its first"});
                    break;
                }
                if (pending.size() + data.size() > kMostRecordBytes) {
                    damage.push_back({records + 1, pendingOffset, "a record larger than 64 MiB"});
                    inRecord = false;
                    pending.clear();
                    break;
                }
                pending.append(data);
                if (type == kLast) {
                    inRecord = false;
                    ++records;
                    onRecord(pendingOffset, std::string_view(pending));
                }
                break;
            default:
                damage.push_back({records + 1, fragmentAt, "an unknown fragment type " + std::to_string(type)});
                inRecord = false;
                nextBlock = true;
                break;
            }
            if (nextBlock)
                break;
        }
    }
    if (inRecord)
        cut = true;
    cutRecord = records + 1;
    return true;
}

// "a/b" for W&B's nested keys (wandb.log({"train": {"loss": 1}})).
template<typename Item>
std::string itemName(const Item& item)
{
    if (item.nested_key_size() == 0)
        return item.key();
    std::string name;
    for (const std::string& part : item.nested_key())
        name += (name.empty() ? "" : "/") + part;
    return name;
}

class RecordHandler
{
public:
    RecordHandler(const std::string& path, ScalarLog& log)
        : m_path(path)
        , m_log(log)
    {
    }

    void record(uint64_t offset, std::string_view bytes)
    {
        ++m_records;
        m_message.Clear();
        if (!m_message.ParseFromArray(bytes.data(), int(bytes.size()))) {
            warn(m_records, offset, "a record that is not a W&B Record message");
            return;
        }
        switch (m_message.record_type_case()) {
        case wandb_internal::Record::kHistory:
            history(m_message.history());
            break;
        case wandb_internal::Record::kConfig:
            config(m_message.config());
            break;
        case wandb_internal::Record::kRun:
            run(m_message.run());
            break;
        case wandb_internal::Record::kExit:
            m_log.attributes["exit_code"] = std::to_string(m_message.exit().exit_code());
            if (m_message.exit().exit_code() != 0)
                m_log.notes.push_back("the run exited with code " + std::to_string(m_message.exit().exit_code()));
            break;
        case wandb_internal::Record::kOutput:
        case wandb_internal::Record::kOutputRaw:
            ++m_outputLines;
            break;
        case wandb_internal::Record::kHeader:
            if (!m_message.header().version_info().producer().empty())
                m_log.attributes["wandb_version"] = m_message.header().version_info().producer();
            break;
        default:
            break;
        }
    }

    void warn(uint64_t record, uint64_t offset, const std::string& what)
    {
        if (m_warnings++ < kMostWarnings)
            m_log.warnings.push_back(m_path + ": record " + std::to_string(record) + " (byte " +
                                     std::to_string(offset) + "): " + what);
    }

    void finish()
    {
        if (m_warnings > kMostWarnings)
            m_log.warnings.push_back(m_path + ": " + std::to_string(m_warnings - kMostWarnings) + " more damaged records");
        m_log.notes.push_back("W&B records: " + records::countText(m_records) + " records, " +
                              records::countText(m_historyRows) + " history rows (step from \"_step\"), " +
                              std::to_string(m_log.series.size()) + " series" +
                              (m_outputLines ? ", " + records::countText(m_outputLines) + " console lines" : ""));
        if (m_notScalars > 0)
            m_log.notes.push_back(records::countText(m_notScalars) +
                                  " history values that are not numbers (images, histograms, tables, text) skipped");
    }

    uint64_t records() const { return m_records; }
    uint64_t historyRows() const { return m_historyRows; }

private:
    void history(const wandb_internal::HistoryRecord& history)
    {
        ++m_historyRows;
        int64_t step = m_nextStep;
        double wallTime = std::numeric_limits<double>::quiet_NaN();
        if (history.has_step())
            step = history.step().num();
        // The values; `_step` among the items is the step when the record has no HistoryStep.
        m_values.clear();
        for (const wandb_internal::HistoryItem& item : history.item()) {
            const std::string name = itemName(item);
            std::string error;
            if (!json::readValue(item.value_json(), m_value, error) || m_value.kind != json::JsonField::Kind::Number) {
                if (!name.empty() && name.front() != '_')
                    ++m_notScalars;
                continue;
            }
            int64_t asStep = 0;
            if (name == "_step") {
                if (!history.has_step() && records::asStep(m_value.number, asStep))
                    step = asStep;
                continue;
            }
            if (name == "_timestamp") {
                wallTime = m_value.number;
                continue;
            }
            if (!name.empty() && name.front() == '_')
                continue; // _runtime, _wandb: the SDK's own
            m_values.emplace_back(name, m_value.number);
        }
        for (const auto& [name, value] : m_values) {
            auto& points = m_log.series[name];
            if (!points.empty() && points.back().step == step)
                points.back() = ScalarPoint{step, value, wallTime};
            else
                points.push_back(ScalarPoint{step, value, wallTime});
        }
        m_nextStep = step + 1;
    }

    void config(const wandb_internal::ConfigRecord& config)
    {
        for (const wandb_internal::ConfigItem& item : config.update()) {
            const std::string name = itemName(item);
            if (name.empty() || name.front() == '_')
                continue; // _wandb: the SDK's own
            std::string text = item.value_json();
            // A config value of {"value": x, "desc": ...} is how W&B stores a config entry.
            if (text.size() > kMostConfigText)
                text = text.substr(0, kMostConfigText) + "...";
            m_log.attributes["config." + name] = text;
        }
    }

    void run(const wandb_internal::RunRecord& run)
    {
        if (!run.run_id().empty())
            m_log.attributes["wandb_run_id"] = run.run_id();
        if (!run.project().empty())
            m_log.attributes["wandb_project"] = run.project();
        if (!run.display_name().empty())
            m_log.attributes["run_name"] = run.display_name();
        if (run.resumed())
            m_log.notes.push_back("a resumed W&B run (from step " + std::to_string(run.starting_step()) + ")");
        if (run.has_config())
            config(run.config());
    }

    const std::string& m_path;
    ScalarLog& m_log;
    wandb_internal::Record m_message;
    json::JsonField m_value;
    std::vector<std::pair<std::string, double>> m_values;
    int64_t m_nextStep = 0;
    uint64_t m_records = 0, m_historyRows = 0, m_outputLines = 0, m_notScalars = 0, m_warnings = 0;
};

} // namespace

SniffVerdict sniffWandbRecords(const FilePrefix& file)
{
    if (file.head.size() >= 4 && file.head.compare(0, 4, ":W&B") == 0) {
        if (file.head.size() >= kHeaderBytes && std::string_view(file.head).substr(0, kHeaderBytes) == kMagic)
            return {98, "W&B run file (header :W&B, version 0)"};
        return {0, "a W&B run file of a version nanscope does not know (its header is not :W&B 0xBEE1 0)"};
    }
    return {0, "no :W&B header"};
}

namespace {

// The run file through `readAt`: its header checked, then its records.
Result<ScalarLog> readWandbRecordsFrom(const std::string& path, uint64_t size, const ReadAt& readAt)
{
    std::string header;
    readAt(0, kHeaderBytes, header);
    if (header.size() < 4 || header.compare(0, 4, ":W&B") != 0)
        return Error{path + ": not a W&B run file (no :W&B header)"};
    if (header.size() < kHeaderBytes || std::string_view(header) != kMagic)
        return Error{path + ": a W&B run file of a version nanscope does not read (header bytes " +
                     (header.size() >= kHeaderBytes ? std::to_string(uint8_t(header[4])) + " " +
                                                          std::to_string(uint8_t(header[5])) + " " +
                                                          std::to_string(uint8_t(header[6]))
                                                    : std::string("cut short")) +
                     ")"};
    ScalarLog log;
    log.path = path;
    log.format = "W&B run file (.wandb)";
    std::vector<Damage> damage;
    bool cut = false;
    uint64_t cutRecord = 0;
    auto handler = std::make_unique<RecordHandler>(path, log);
    auto onRecord = [&](uint64_t offset, std::string_view record) { handler->record(offset, record); };
    if (!readFraming(readAt, size, 0, onRecord, damage, cut, cutRecord)) {
        // wandb-core before 0.17.6 counted blocks from after the header.
        damage.clear();
        cut = false;
        if (!readFraming(readAt, size, kHeaderBytes, onRecord, damage, cut, cutRecord))
            return Error{path + ": a W&B run file whose first record does not fit its block: damaged"};
        log.notes.push_back("blocks counted from after the header (as wandb-core before 0.17.6 wrote them)");
    }
    for (const Damage& d : damage)
        handler->warn(d.record, d.offset, d.what + "; the records before it and the blocks after it are read");
    if (cut)
        handler->warn(cutRecord, size, "the file ends inside a record (cut, or the run is still being written); "
                                       "the records before it are read");
    handler->finish();
    stepsFromLoggedCounter(log);
    // A Hugging Face Trainer's run (its TrainingArguments are the run's config) logs 0.0 for a NaN loss.
    const auto setting = [&log](const char* name) {
        const auto found = log.attributes.find(std::string("config.") + name);
        return found == log.attributes.end() ? std::string() : found->second;
    };
    if (trainerHidesNonfiniteLosses(setting("logging_steps"), setting("logging_nan_inf_filter")) &&
        !setting("logging_nan_inf_filter").empty())
        readHiddenNonfiniteLosses(log, "train/loss", "train/grad_norm");
    if (log.series.empty())
        return Error{path + ": a W&B run file with no history values (" + records::countText(handler->records()) +
                     " records, " + records::countText(handler->historyRows()) + " history rows)"};
    addSkippedStepEvents(log);
    return log;
}

} // namespace

Result<ScalarLog> readWandbRecordBytes(const std::string& path, std::string_view bytes)
{
    return readWandbRecordsFrom(path, bytes.size(), [bytes](uint64_t offset, size_t size, std::string& out) {
        out.assign(offset < bytes.size() ? bytes.substr(size_t(offset), size) : std::string_view());
    });
}

Result<ScalarLog> readWandbRecords(const std::string& path)
{
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in)
        return Error{path + ": cannot be read"};
    return readWandbRecordsFrom(path, size, [&in](uint64_t offset, size_t size, std::string& out) {
        out.resize(size);
        in.clear();
        in.seekg(std::streamoff(offset));
        in.read(out.data(), std::streamsize(size));
        out.resize(size_t(std::max<std::streamsize>(0, in.gcount())));
    });
}

} // namespace nanscope
