#include "core/checkpoint/StrictJson.h"

#include "core/RapidJsonErrors.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <charconv>
#include <limits>
#include <set>

namespace nanscope::strictjson {

namespace {

// Numbers as their text, so that the grammar's integers and their 64-bit range are ours to judge.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;

// Builds the tree as the reader reports values. A container's vector grows only after the child
// being built is closed, so the pointers on the stack stay valid.
class TreeBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TreeBuilder> {
public:
    TreeBuilder(JsonValue& root, int mostDepth)
        : m_root(root)
        , m_mostDepth(mostDepth)
    {
    }

    bool Null() { return place(JsonValue::Kind::Null) != nullptr; }
    bool Bool(bool truth)
    {
        JsonValue* value = place(JsonValue::Kind::Bool);
        if (value)
            value->integer = truth ? 1 : 0;
        return value != nullptr;
    }
    bool RawNumber(const char* text, rapidjson::SizeType length, bool)
    {
        JsonValue* value = place(JsonValue::Kind::Number);
        if (!value)
            return false;
        const std::string_view token(text, length);
        value->numberIsInteger = token.find_first_of(".eE") == std::string_view::npos;
        if (value->numberIsInteger) {
            const auto read = std::from_chars(text, text + length, value->integer);
            if (read.ec != std::errc() || read.ptr != text + length)
                return fail("JSON integer " + std::string(token) + " does not fit 64 bits");
            value->number = double(value->integer);
            return true;
        }
        const auto read = std::from_chars(text, text + length, value->number);
        if (read.ec == std::errc::result_out_of_range) // 1e400 and 1e-400, as strtod reads them
            value->number = token.find("e-") != std::string_view::npos || token.find("E-") != std::string_view::npos
                                ? 0.0
                                : std::numeric_limits<double>::infinity();
        return true;
    }
    bool String(const char* text, rapidjson::SizeType length, bool)
    {
        if (!wellFormed(text, length))
            return false;
        JsonValue* value = place(JsonValue::Kind::String);
        if (value)
            value->text.assign(text, length);
        return value != nullptr;
    }
    bool Key(const char* text, rapidjson::SizeType length, bool)
    {
        if (!wellFormed(text, length))
            return false;
        m_key.assign(text, length);
        if (!m_keys.back().insert(m_key).second)
            return fail("duplicate JSON key \"" + m_key + "\"");
        return true;
    }
    bool StartObject() { return open(JsonValue::Kind::Object); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool StartArray() { return open(JsonValue::Kind::Array); }
    bool EndArray(rapidjson::SizeType) { return close(); }

    const std::string& error() const { return m_error; }

private:
    bool fail(const std::string& why)
    {
        m_error = why;
        return false;
    }
    // RapidJSON pairs a high surrogate with its low half; a lone low one arrives encoded as the
    // three bytes ED B0..BF, which no well-formed name holds.
    bool wellFormed(const char* text, size_t length)
    {
        for (size_t i = 0; i + 1 < length; ++i)
            if (static_cast<unsigned char>(text[i]) == 0xED && static_cast<unsigned char>(text[i + 1]) >= 0xB0)
                return fail("\\u escape holds a lone low surrogate");
        return true;
    }
    JsonValue* place(JsonValue::Kind kind)
    {
        JsonValue* value = nullptr;
        if (m_stack.empty()) {
            value = &m_root;
        } else if (m_stack.back()->kind == JsonValue::Kind::Array) {
            value = &m_stack.back()->items.emplace_back();
        } else {
            value = &m_stack.back()->members.emplace_back(std::move(m_key), JsonValue{}).second;
            m_key.clear();
        }
        value->kind = kind;
        return value;
    }
    bool open(JsonValue::Kind kind)
    {
        if (int(m_stack.size()) >= m_mostDepth)
            return fail("JSON nested too deep");
        JsonValue* value = place(kind);
        m_stack.push_back(value);
        if (kind == JsonValue::Kind::Object)
            m_keys.emplace_back();
        return true;
    }
    bool close()
    {
        if (m_stack.back()->kind == JsonValue::Kind::Object)
            m_keys.pop_back();
        m_stack.pop_back();
        return true;
    }

    JsonValue& m_root;
    int m_mostDepth;
    std::vector<JsonValue*> m_stack;
    std::vector<std::set<std::string>> m_keys; // per open object
    std::string m_key;
    std::string m_error;
};

} // namespace

const JsonValue* member(const JsonValue& object, const std::string& key)
{
    for (const auto& [name, value] : object.members)
        if (name == key)
            return &value;
    return nullptr;
}

bool parse(const std::string& text, JsonValue& out, std::string& error, int mostDepth)
{
    out = JsonValue{};
    TreeBuilder builder(out, mostDepth);
    rapidjson::MemoryStream bytes(text.data(), text.size());
    rapidjson::Reader reader;
    const rapidjson::ParseResult result = reader.Parse<kParseFlags>(bytes, builder);
    if (!result.IsError())
        return true;
    const std::string why = builder.error().empty() ? rapidJsonErrorText(result.Code()) : builder.error();
    error = why + " at byte " + std::to_string(result.Offset());
    return false;
}

} // namespace nanscope::strictjson
