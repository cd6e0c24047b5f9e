#include "core/importers/JsonFields.h"

#include "core/RapidJsonErrors.h"
#include "core/importers/DecimalText.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

namespace nanscope::json {

namespace {

// Numbers come as their text (converted by std::from_chars, correctly rounded: RapidJSON's own
// full-precision path is slower and has been wrong on rare inputs), NaN and Infinity among them.
// Iterative: an entry nested 200,000 lists deep would overflow a recursive parser's stack.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNanAndInfFlag
    | rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag;

bool numberFromText(const char* text, size_t length, double& number)
{
    // from_chars takes no leading '+' (JSON has none) and reads "NaN", "Infinity" and "-Infinity"
    // as strtod does.
    const std::from_chars_result read = std::from_chars(text, text + length, number);
    if (read.ec == std::errc::result_out_of_range) {
        // RapidJSON has already refused an overflow (1e999), so this is an underflow (1e-400):
        // zero, as Python reads it.
        number = length > 0 && text[0] == '-' ? -0.0 : 0.0;
        return read.ptr == text + length;
    }
    return read.ec == std::errc() && read.ptr == text + length;
}

// Collects the values at depth 1 of the document (an object's fields), or the root value itself.
class FieldCollector : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, FieldCollector> {
public:
    FieldCollector(std::vector<JsonField>& fields, bool rootIsObject, bool flatten = false)
        : m_fields(fields)
        , m_rootIsObject(rootIsObject)
        , m_flatten(flatten && rootIsObject)
    {
    }

    bool Null() { return nested(JsonField::Kind::Null) || scalar(JsonField::Kind::Null); }
    bool Bool(bool value)
    {
        if (nested(JsonField::Kind::Bool)) {
            m_fields.back().text = value ? "true" : "false";
            return true;
        }
        if (!rootOrValueDepth())
            return true;
        JsonField* field = current(JsonField::Kind::Bool);
        if (field)
            field->text = value ? "true" : "false";
        return field != nullptr;
    }
    bool RawNumber(const char* text, rapidjson::SizeType length, bool)
    {
        if (nestedValue()) {
            m_fields.emplace_back();
            m_fields.back().key = nestedKey();
            m_fields.back().kind = JsonField::Kind::Number;
            if (!numberFromText(text, length, m_fields.back().number)) {
                m_badNumber = std::string(text, length);
                return false;
            }
            return true;
        }
        if (!rootOrValueDepth())
            return true;
        JsonField* field = current(JsonField::Kind::Number);
        if (!field)
            return false;
        if (!numberFromText(text, length, field->number)) {
            m_badNumber = std::string(text, length);
            return false;
        }
        return true;
    }
    bool String(const char* text, rapidjson::SizeType length, bool)
    {
        if (nested(JsonField::Kind::Text)) {
            m_fields.back().text.assign(text, length);
            return true;
        }
        if (!rootOrValueDepth())
            return true;
        JsonField* field = current(JsonField::Kind::Text);
        if (field)
            field->text.assign(text, length);
        return field != nullptr;
    }
    bool Key(const char* text, rapidjson::SizeType length, bool)
    {
        if (m_rootIsObject && m_depth == 1) {
            m_fields.emplace_back();
            m_fields.back().key.assign(text, length);
        }
        if (m_flatten && m_depth >= 1 && size_t(m_depth) <= m_keys.size() && m_objectsOnly)
            m_keys[size_t(m_depth) - 1].assign(text, length);
        return true;
    }
    bool StartObject()
    {
        if (nestedValue() && !nested(JsonField::Kind::Object))
            return false;
        return open(JsonField::Kind::Object);
    }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool StartArray()
    {
        if (nestedValue() && !nested(JsonField::Kind::List))
            return false;
        return open(JsonField::Kind::List);
    }
    bool EndArray(rapidjson::SizeType) { return close(); }

    bool rootWasWrongKind() const { return m_rootWrongKind; }
    const std::string& badNumber() const { return m_badNumber; }

private:
    // An object's field values sit at depth 1; a lone value at depth 0.
    bool atValueDepth() const { return m_depth == (m_rootIsObject ? 1 : 0); }

    // The field (or lone value) a value at the value depth fills; null when the root of what
    // should be an object is a number, a string, ...
    JsonField* current(JsonField::Kind kind)
    {
        if (m_rootIsObject && m_depth == 0) {
            m_rootWrongKind = true;
            return nullptr;
        }
        if (!m_rootIsObject)
            m_fields.emplace_back();
        m_fields.back().kind = kind;
        return &m_fields.back();
    }
    bool rootOrValueDepth() const { return m_depth == 0 || atValueDepth(); }

    // Flattening: a value inside objects only, below the root object's fields, is a field of its
    // own named by the keys to it ("train/loss"). Lists end the flattening below them.
    bool nestedValue() const { return m_flatten && m_depth > 1 && m_objectsOnly; }
    std::string nestedKey() const
    {
        std::string key = m_keys[0];
        for (int level = 1; level < m_depth; ++level)
            key += "/" + m_keys[size_t(level)];
        return key;
    }
    // A nested value of another kind than a number: a field of that kind; false when not nested.
    bool nested(JsonField::Kind kind)
    {
        if (!nestedValue())
            return false;
        m_fields.emplace_back();
        m_fields.back().key = nestedKey();
        m_fields.back().kind = kind;
        return true;
    }
    bool scalar(JsonField::Kind kind) { return !rootOrValueDepth() || current(kind) != nullptr; }
    bool open(JsonField::Kind kind)
    {
        if (m_rootIsObject && m_depth == 0 && kind != JsonField::Kind::Object) {
            m_rootWrongKind = true;
            return false;
        }
        if (atValueDepth() && !current(kind))
            return false;
        ++m_depth;
        if (m_flatten) {
            m_kinds.push_back(kind);
            m_objectsOnly = m_objectsOnly && kind == JsonField::Kind::Object && m_depth <= kDeepestFlattened;
            if (m_keys.size() < size_t(m_depth))
                m_keys.resize(size_t(m_depth));
        }
        return true;
    }
    bool close()
    {
        --m_depth;
        if (m_flatten && !m_kinds.empty()) {
            m_kinds.pop_back();
            m_objectsOnly = m_depth <= kDeepestFlattened &&
                            std::all_of(m_kinds.begin(), m_kinds.end(),
                                        [](JsonField::Kind k) { return k == JsonField::Kind::Object; });
        }
        return true;
    }

    static constexpr int kDeepestFlattened = 4;

    std::vector<JsonField>& m_fields;
    const bool m_rootIsObject;
    const bool m_flatten;
    std::vector<std::string> m_keys;           // the key at each object level (flattening)
    std::vector<JsonField::Kind> m_kinds;      // the containers open (flattening)
    bool m_objectsOnly = true;                 // every open container an object
    int m_depth = 0;
    bool m_rootWrongKind = false;
    std::string m_badNumber;
};

// One JSON value from the start of `text`. With `end`, it is set one past the value and what
// follows is not looked at; without, only whitespace may follow.
bool parse(std::string_view text, std::vector<JsonField>& fields, bool rootIsObject, std::string& error,
           size_t* end = nullptr, bool flatten = false)
{
    fields.clear();
    FieldCollector collector(fields, rootIsObject, flatten);
    rapidjson::MemoryStream bytes(text.data(), text.size());
    // One reader per thread: the iterative parser's stack is allocated on first use and kept, where
    // a reader per call allocated it again for each of a 100,000-entry log_history's entries.
    thread_local rapidjson::Reader reader;
    const rapidjson::ParseResult result = reader.Parse<kParseFlags>(bytes, collector);
    if (result.IsError()) {
        if (collector.rootWasWrongKind())
            error = "not a JSON object";
        else if (!collector.badNumber().empty())
            error = "\"" + collector.badNumber() + "\" is no number (byte " + std::to_string(result.Offset()) + ")";
        else
            error = rapidJsonErrorText(result.Code()) + " (byte " + std::to_string(result.Offset()) + ")";
        return false;
    }
    if (end) {
        *end = bytes.Tell();
        return true;
    }
    // kParseStopWhenDoneFlag ends at the value's end: only whitespace may follow it.
    for (size_t i = bytes.Tell(); i < text.size(); ++i)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
            error = "more after the value ends (byte " + std::to_string(i) + ")";
            return false;
        }
    return true;
}

} // namespace

const char* kindName(JsonField::Kind kind)
{
    switch (kind) {
    case JsonField::Kind::Number:
        return "number";
    case JsonField::Kind::Text:
        return "text";
    case JsonField::Kind::Null:
        return "null";
    case JsonField::Kind::Bool:
        return "true/false";
    case JsonField::Kind::List:
        return "list";
    case JsonField::Kind::Object:
        return "object";
    }
    return "value";
}

const JsonField* findField(const std::vector<JsonField>& fields, std::string_view key)
{
    for (const JsonField& field : fields)
        if (field.key == key)
            return &field;
    return nullptr;
}

namespace {

// Whether a key is written twice. Entries have a few keys, and a repeat is rare: a few keys are
// compared pairwise (no allocation, once per entry of a 100,000-entry log), more through a sorted
// copy in n log n.
bool hasRepeatedKey(const std::vector<JsonField>& fields)
{
    constexpr size_t kPairwise = 16;
    if (fields.size() <= kPairwise) {
        for (size_t i = 1; i < fields.size(); ++i)
            for (size_t j = 0; j < i; ++j)
                if (fields[i].key == fields[j].key)
                    return true;
        return false;
    }
    std::vector<std::string_view> keys;
    keys.reserve(fields.size());
    for (const JsonField& field : fields)
        keys.push_back(field.key);
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

// A key written twice keeps its last value, as Qt's and Python's parsers do.
void keepLastOfEachKey(std::vector<JsonField>& fields)
{
    if (!hasRepeatedKey(fields))
        return;
    std::unordered_map<std::string_view, size_t> lastIndex;
    for (size_t i = 0; i < fields.size(); ++i)
        lastIndex[fields[i].key] = i;
    std::vector<bool> keep(fields.size());
    for (size_t i = 0; i < fields.size(); ++i)
        keep[i] = lastIndex[fields[i].key] == i;
    std::vector<JsonField> lastOfEach;
    for (size_t i = 0; i < fields.size(); ++i)
        if (keep[i])
            lastOfEach.push_back(std::move(fields[i]));
    fields = std::move(lastOfEach);
}

} // namespace

bool readObjectFields(std::string_view text, std::vector<JsonField>& fields, std::string& error)
{
    if (!parse(text, fields, true, error))
        return false;
    keepLastOfEachKey(fields);
    return true;
}

bool readFlattenedObjectFields(std::string_view text, std::vector<JsonField>& fields, std::string& error)
{
    if (!parse(text, fields, true, error, nullptr, true))
        return false;
    keepLastOfEachKey(fields);
    return true;
}

bool readPlainObjectFields(std::string_view text, std::vector<JsonFieldView>& fields)
{
    fields.clear();
    const char* p = text.data();
    const char* end = p + text.size();
    auto spaces = [&] {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            ++p;
    };
    auto quoted = [&](std::string_view& out) {
        const char* start = ++p; // past the opening quote
        while (p < end && *p != '"') {
            if (*p == '\\' || static_cast<unsigned char>(*p) < 0x20)
                return false;
            ++p;
        }
        if (p == end)
            return false;
        out = std::string_view(start, size_t(p - start));
        ++p;
        return true;
    };
    auto word = [&](std::string_view w) {
        if (size_t(end - p) < w.size() || std::string_view(p, w.size()) != w)
            return false;
        p += w.size();
        return true;
    };
    spaces();
    if (p == end || *p != '{')
        return false;
    ++p;
    spaces();
    if (p < end && *p == '}') {
        ++p;
    } else {
        for (;;) {
            spaces();
            JsonFieldView field;
            if (p == end || *p != '"' || !quoted(field.key))
                return false;
            spaces();
            if (p == end || *p != ':')
                return false;
            ++p;
            spaces();
            if (p == end)
                return false;
            const char c = *p;
            if (c == '"') {
                field.kind = JsonField::Kind::Text;
                if (!quoted(field.text))
                    return false;
            } else if (c == 'n') {
                if (!word("null"))
                    return false;
            } else if (c == 't' || c == 'f') {
                if (!word(c == 't' ? "true" : "false"))
                    return false;
                field.kind = JsonField::Kind::Bool;
                field.text = c == 't' ? "true" : "false";
            } else if (c == 'N' || c == 'I' || (c == '-' && p + 1 < end && p[1] == 'I')) {
                const bool negative = c == '-';
                if (negative)
                    ++p;
                field.kind = JsonField::Kind::Number;
                if (word("NaN"))
                    field.number = std::numeric_limits<double>::quiet_NaN();
                else if (word("Infinity"))
                    field.number = negative ? -std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::infinity();
                else
                    return false;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                // JSON's numbers: no leading zero before another digit, no '+', no bare '.'.
                const char* digit = c == '-' ? p + 1 : p;
                if (digit == end || !(*digit >= '0' && *digit <= '9') ||
                    (*digit == '0' && digit + 1 < end && digit[1] >= '0' && digit[1] <= '9'))
                    return false;
                const char* next = textrecord::readNumber(p, end, field.number);
                if (!next)
                    return false;
                p = next;
                field.kind = JsonField::Kind::Number;
            } else {
                return false; // an object or a list inside: RapidJSON reads them
            }
            fields.push_back(field);
            spaces();
            if (p < end && *p == ',') {
                ++p;
                continue;
            }
            if (p < end && *p == '}') {
                ++p;
                break;
            }
            return false;
        }
    }
    spaces();
    return p == end;
}

bool readLeadingObjectFields(std::string_view text, std::vector<JsonField>& fields, size_t& end)
{
    std::string error; // JsonScan and readObjectFields say what is wrong with a refused entry
    if (!parse(text, fields, true, error, &end))
        return false;
    keepLastOfEachKey(fields);
    return true;
}

bool readValue(std::string_view text, JsonField& value, std::string& error)
{
    std::vector<JsonField> one;
    if (!parse(text, one, false, error))
        return false;
    if (one.size() != 1) {
        error = "no JSON value";
        return false;
    }
    value = std::move(one.front());
    return true;
}

} // namespace nanscope::json
