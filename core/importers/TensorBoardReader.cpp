#include "core/importers/TensorBoardReader.h"

#include "core/importers/JsonFields.h"
#include "core/importers/TrainerHiddenNonfiniteLoss.h"
#include "core/importers/TfRecordReader.h"
#include "core/tensor/ElementConversion.h"
#include "tensorboard_event.pb.h"

#include <google/protobuf/arena.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

namespace nanscope {

namespace {

// TensorFlow's DataType numbers for the dtypes a scalar or a histogram can come in.
constexpr int kDtFloat = 1;
constexpr int kDtDouble = 2;
constexpr int kDtInt32 = 3;
constexpr int kDtInt64 = 9;
constexpr int kDtBfloat16 = 14;
constexpr int kDtHalf = 19;

// The values of a tensor of a float-like dtype, from its typed field or its raw little-endian
// content (x86 and ARM hosts are little-endian, as is every writer's raw content).
std::vector<double> floatValues(const tb::TensorProto& tensor)
{
    std::vector<double> values;
    const std::string& raw = tensor.tensor_content();
    auto fromRaw = [&](size_t width, auto decode) {
        for (size_t at = 0; at + width <= raw.size(); at += width)
            values.push_back(decode(raw.data() + at));
    };
    switch (tensor.dtype()) {
    case kDtFloat:
        values.assign(tensor.float_val().begin(), tensor.float_val().end());
        if (values.empty())
            fromRaw(4, [](const char* p) {
                float f;
                std::memcpy(&f, p, 4);
                return double(f);
            });
        break;
    case kDtDouble:
        values.assign(tensor.double_val().begin(), tensor.double_val().end());
        if (values.empty())
            fromRaw(8, [](const char* p) {
                double d;
                std::memcpy(&d, p, 8);
                return d;
            });
        break;
    case kDtHalf:
    case kDtBfloat16: {
        // Half values travel widened in an int32 field; the one conversion lives in ElementConversion.h.
        auto convert = [&](uint16_t bits) {
            return tensor.dtype() == kDtHalf ? halfToFloat(bits) : bfloat16ToFloat(bits);
        };
        for (int32_t bits : tensor.half_val())
            values.push_back(convert(uint16_t(bits)));
        if (values.empty())
            fromRaw(2, [&](const char* p) {
                uint16_t b;
                std::memcpy(&b, p, 2);
                return double(convert(b));
            });
        break;
    }
    case kDtInt32:
        values.assign(tensor.int_val().begin(), tensor.int_val().end());
        break;
    case kDtInt64:
        for (int64_t v : tensor.int64_val())
            values.push_back(double(v));
        break;
    default:
        break;
    }
    return values;
}

// The element count the shape declares; nullopt for a negative or absurd dimension.
std::optional<int64_t> elementCount(const tb::TensorShapeProto& shape)
{
    int64_t count = 1;
    for (const auto& dim : shape.dim()) {
        if (dim.size() < 0 || (dim.size() > 0 && count > (int64_t(1) << 40) / dim.size()))
            return std::nullopt;
        count *= dim.size();
    }
    return count;
}

bool isFloatLike(int dtype)
{
    return dtype == kDtFloat || dtype == kDtDouble || dtype == kDtHalf || dtype == kDtBfloat16;
}

std::string plural(const std::string& noun, uint64_t count)
{
    if (count == 1)
        return noun;
    if (noun.size() >= 7 && noun.compare(noun.size() - 7, 7, "summary") == 0)
        return noun.substr(0, noun.size() - 1) + "ies";
    return noun + "s";
}

google::protobuf::ArenaOptions arenaOptions(std::vector<char>& block)
{
    google::protobuf::ArenaOptions options;
    options.initial_block = block.data();
    options.initial_block_size = block.size();
    return options;
}

class EventDecoder {
public:
    EventDecoder(const std::string& path, ScalarLog& log)
        : m_path(path)
        , m_log(log)
    {
    }

    void decodeRecord(uint64_t number, uint64_t offset, std::string_view data)
    {
        // Each record's message lives in an arena that the next record starts over: its summary,
        // values and tags take no allocation of their own. Parsing again into one reused message
        // still allocated them anew, since clearing a oneof deletes its summary: 300,000 times
        // for a 100,000-step log of three scalars.
        m_arena.Reset();
        tb::Event& event = *google::protobuf::Arena::CreateMessage<tb::Event>(&m_arena);
        if (data.size() > size_t(std::numeric_limits<int>::max()) || !event.ParseFromArray(data.data(), int(data.size()))) {
            m_log.warnings.push_back(m_path + ": record " + std::to_string(number) + " (byte " + std::to_string(offset)
                + "): its CRCs check but it is no Event message; record skipped");
            return;
        }
        if (event.has_source_metadata() && !event.source_metadata().writer().empty())
            m_log.attributes["writer"] = event.source_metadata().writer();
        switch (event.what_case()) {
        case tb::Event::kFileVersion:
            m_log.attributes["file_version"] = event.file_version();
            skip("file_version record");
            break;
        case tb::Event::kSummary:
            for (const auto& value : event.summary().value())
                decodeValue(value, event.step(), event.wall_time());
            break;
        case tb::Event::kGraphDef:
        case tb::Event::kMetaGraphDef:
            skip("graph record");
            break;
        case tb::Event::kSessionLog:
            skip("session log record");
            break;
        case tb::Event::kLogMessage:
            skip("log message record");
            break;
        case tb::Event::kTaggedRunMetadata:
            skip("run metadata record");
            break;
        case tb::Event::WHAT_NOT_SET:
            skip("empty event record");
            break;
        }
    }

    // The counts of what was skipped, and how TF2 histogram sums were made, as notes.
    void finish()
    {
        for (const auto& [what, count] : m_skipped)
            m_log.notes.push_back(std::to_string(count) + " " + plural(what, count) + " skipped");
        if (m_estimatedHistograms > 0)
            m_log.notes.push_back(std::to_string(m_estimatedHistograms) + " TF2 histogram "
                + plural("record", m_estimatedHistograms)
                + " hold buckets only: their sum and sum of squares are estimated from the bucket centres");
    }

private:
    void skip(const std::string& what) { ++m_skipped[what]; }

    void decodeValue(const tb::Summary::Value& value, int64_t step, double wallTime)
    {
        const std::string& tag = value.tag().empty() ? value.node_name() : value.tag();
        // Writers attach the metadata to the first value of a tag only; later values rely on it.
        if (value.has_metadata())
            m_pluginByTag[tag] = value.metadata().plugin_data().plugin_name();
        static const std::string kNoPlugin;
        const auto known = m_pluginByTag.find(tag);
        const std::string& plugin = known == m_pluginByTag.end() ? kNoPlugin : known->second;

        switch (value.value_case()) {
        case tb::Summary::Value::kSimpleValue:
            m_log.add(tag, step, double(value.simple_value()), wallTime);
            break;
        case tb::Summary::Value::kHisto:
            addHistogram(tag, step, value.histo());
            break;
        case tb::Summary::Value::kTensor:
            decodeTensor(tag, plugin, step, wallTime, value.tensor());
            break;
        case tb::Summary::Value::kImage:
            skip("image summary");
            break;
        case tb::Summary::Value::kAudio:
            skip("audio summary");
            break;
        case tb::Summary::Value::kObsoleteOldStyleHistogram:
            skip("old-style histogram summary");
            break;
        case tb::Summary::Value::VALUE_NOT_SET:
            // hparams writes its experiment and session records as metadata with no value.
            skip(plugin.empty() ? "summary without a value" : plugin + " record");
            break;
        }
    }

    void addHistogram(const std::string& tag, int64_t step, const tb::HistogramProto& histo)
    {
        m_log.histograms[tag].push_back(
            HistogramPoint { step, histo.min(), histo.max(), histo.num(), histo.sum(), histo.sum_squares() });
    }

    void decodeTensor(
        const std::string& tag, const std::string& plugin, int64_t step, double wallTime, const tb::TensorProto& tensor)
    {
        const std::optional<int64_t> count = elementCount(tensor.tensor_shape());
        if (plugin == "histograms") {
            if (!addTensorHistogram(tag, step, tensor))
                skip("histogram tensor of an unexpected shape or type");
            return;
        }
        const bool scalarPlugin = plugin == "scalars";
        const bool plainScalar = plugin.empty() && isFloatLike(tensor.dtype());
        if ((scalarPlugin || plainScalar) && count == 1) {
            const std::vector<double> values = floatValues(tensor);
            if (!values.empty()) {
                m_log.add(tag, step, values.front(), wallTime);
                return;
            }
        }
        // torch's SummaryWriter.add_text("args", ...) names it "args/text_summary".
        if (plugin == "text" && (tag == "args" || tag == "args/text_summary") && tensor.string_val_size() == 1 &&
            keepTrainingArguments(tensor.string_val(0)))
            return;
        if (scalarPlugin)
            skip("scalar tensor of an unexpected shape or type");
        else
            skip(plugin.empty() ? "tensor summary" : plugin + " summary");
    }

    // transformers' TensorBoardCallback writes its TrainingArguments as JSON text under "args": the
    // settings that say how its loss was logged are kept as attributes (args.logging_steps, ...).
    bool keepTrainingArguments(const std::string& text)
    {
        std::vector<json::JsonField> fields;
        std::string error;
        if (!json::readObjectFields(text, fields, error))
            return false;
        for (const char* name : {"logging_steps", "logging_nan_inf_filter", "logging_strategy"}) {
            const json::JsonField* field = json::findField(fields, name);
            if (!field)
                continue;
            std::string value = field->text; // text, or "true"/"false"
            if (field->kind == json::JsonField::Kind::Number)
                value = field->number == std::floor(field->number) ? std::to_string(int64_t(field->number))
                                                                   : std::to_string(field->number);
            m_log.attributes[std::string("args.") + name] = value;
        }
        return true;
    }

    // A TF2 histogram: [k, 3] rows of (left edge, right edge, count), k = 0 for no data.
    bool addTensorHistogram(const std::string& tag, int64_t step, const tb::TensorProto& tensor)
    {
        const auto& dims = tensor.tensor_shape().dim();
        if (dims.size() != 2 || dims[1].size() != 3 || !isFloatLike(tensor.dtype()))
            return false;
        const std::vector<double> values = floatValues(tensor);
        // Divided, not multiplied: rows x 3 can wrap around to the number of values given.
        if (dims[0].size() < 0 || values.size() % 3 != 0 || values.size() / 3 != uint64_t(dims[0].size()))
            return false;
        HistogramPoint point;
        point.step = step;
        point.min = point.max = std::numeric_limits<double>::quiet_NaN(); // no data, no range
        bool seenNonEmpty = false;
        for (size_t row = 0; row < values.size(); row += 3) {
            const double left = values[row], right = values[row + 1], count = values[row + 2];
            if (count == 0)
                continue;
            if (!seenNonEmpty)
                point.min = left;
            seenNonEmpty = true;
            point.max = right;
            point.count += count;
            const double centre = (left + right) / 2;
            point.sum += count * centre;
            point.sumSquares += count * centre * centre;
        }
        m_log.histograms[tag].push_back(point);
        ++m_estimatedHistograms;
        return true;
    }

    const std::string& m_path;
    ScalarLog& m_log;
    std::map<std::string, std::string> m_pluginByTag;
    // The arena of the record being decoded, first in a block of its own that every record reuses;
    // a record larger than the block (an image, a graph) takes more, given back at the next one.
    std::vector<char> m_arenaBlock = std::vector<char>(size_t(64) << 10);
    google::protobuf::Arena m_arena { arenaOptions(m_arenaBlock) };
    std::map<std::string, uint64_t> m_skipped;
    uint64_t m_estimatedHistograms = 0;
};

// Steps that go back within one tag: a resumed or restarted run. The points stay as written.
void noteStepsGoingBack(ScalarLog& log)
{
    for (const auto& [tag, points] : log.series) {
        size_t backwards = 0;
        int64_t firstFrom = 0, firstTo = 0;
        for (size_t i = 1; i < points.size(); ++i) {
            if (points[i].step >= points[i - 1].step)
                continue;
            if (backwards++ == 0)
                firstFrom = points[i - 1].step, firstTo = points[i].step;
        }
        if (backwards > 0)
            log.notes.push_back(tag + ": the step goes back " + std::to_string(backwards)
                + (backwards == 1 ? " time" : " times") + " (first from " + std::to_string(firstFrom) + " to "
                + std::to_string(firstTo) + "), as in a resumed or restarted run; points kept in file order");
    }
}

} // namespace

Result<ScalarLog> readTensorBoardEvents(const std::string& path)
{
    ScalarLog log;
    log.path = path;
    log.format = "TensorBoard event file";
    EventDecoder decoder(path, log);
    Result<TfRecordScan> scan = readTfRecords(path,
        [&](uint64_t number, uint64_t offset, std::string_view data) { decoder.decodeRecord(number, offset, data); });
    if (!scan)
        return Error { scan.error() };
    if (scan->recordsRead == 0 && !scan->warnings.empty())
        return Error { scan->warnings.front() + " (no readable record: is this a TensorBoard event file?)" };
    // Framing damage (bad CRCs, a cut) first, then the records whose content was no Event.
    log.warnings.insert(log.warnings.begin(), scan->warnings.begin(), scan->warnings.end());
    decoder.finish();
    noteStepsGoingBack(log);
    // transformers' TensorBoardCallback logs 0.0 for a NaN loss, as the Trainer's own log does.
    const auto argument = [&log](const char* name) {
        const auto found = log.attributes.find(std::string("args.") + name);
        return found == log.attributes.end() ? std::string() : found->second;
    };
    if (!argument("logging_nan_inf_filter").empty() &&
        trainerHidesNonfiniteLosses(argument("logging_steps"), argument("logging_nan_inf_filter")))
        readHiddenNonfiniteLosses(log, "train/loss", "train/grad_norm");
    if (scan->recordsRead == 0)
        log.notes.push_back("the file holds no records (a writer that had not flushed yet)");
    return log;
}

bool isTensorBoardEventFile(const std::string& path)
{
    return std::filesystem::path(path).filename().string().find("tfevents") != std::string::npos
        && startsWithTfRecord(path);
}

} // namespace nanscope
