#pragma once

// The one JSON decoder of the log readers (trainer_state.json entries, W&B history lines): RapidJSON's
// SAX reader, with no document tree built. Python's json module writes NaN, Infinity and -Infinity
// as bare words, which strict JSON rejects; they read here as the numbers they stand for. Numbers
// are converted with std::from_chars, correctly rounded, as Python wrote them and Qt read them.
// How a damaged document is cut into values is JsonScan's job; this decodes one value.

#include <string>
#include <string_view>
#include <vector>

namespace nanscope::json {

struct JsonField {
    enum class Kind { Number, Text, Null, Bool, List, Object };
    std::string key;   // empty for a lone value
    Kind kind = Kind::Null;
    double number = 0; // Kind::Number
    std::string text;  // Kind::Text; "true" or "false" for Kind::Bool
};

// What a person calls a value of that kind, in a note about skipped values: "text", "list", ...
const char* kindName(JsonField::Kind kind);

// The fields of the JSON object that is the whole of `text` (whitespace around it allowed), in file
// order; a key written twice keeps its last value. Nested lists and objects are kept as their kind
// only. False, with `error` saying what is wrong and at which byte of `text`, when `text` is not
// one valid JSON object. `fields` is cleared first; a caller reading many objects passes the same
// vector to reuse its memory.
bool readObjectFields(std::string_view text, std::vector<JsonField>& fields, std::string& error);

// readObjectFields, with the fields of nested objects read too, named by the keys to them joined
// with '/' ({"train": {"loss": 1.5}} gives "train" as an object and "train/loss" as a number), four
// levels deep; inside a list nothing is read.
bool readFlattenedObjectFields(std::string_view text, std::vector<JsonField>& fields, std::string& error);

// A field viewed where it stands (in the text read, or in a JsonField): no copy of its key or text.
struct JsonFieldView {
    std::string_view key;
    JsonField::Kind kind = JsonField::Kind::Null;
    double number = 0;
    std::string_view text;
};

// The common line of a JSON-lines log, read without RapidJSON: one object of plain keys, with
// numbers, NaN/Infinity, null, true/false and strings without escapes as values. False for
// anything else (an escape, a nested object or list, damage), which readObjectFields and
// readFlattenedObjectFields then read and judge. Numbers are read as textrecord::readNumber reads
// them, correctly rounded, and fast enough for a 2 GB log.
bool readPlainObjectFields(std::string_view text, std::vector<JsonFieldView>& fields);

// The fields of the JSON object that begins `text` (whitespace before it allowed), as
// readObjectFields reads them, and `end`, one past its closing brace: what follows is not looked
// at. False when no valid object begins there; `end` is then not set (JsonScan finds where the
// damaged value ends, and readObjectFields says what is wrong with it).
bool readLeadingObjectFields(std::string_view text, std::vector<JsonField>& fields, size_t& end);

// The field named `key`, or null.
const JsonField* findField(const std::vector<JsonField>& fields, std::string_view key);

// The one JSON value that is the whole of `text`: a number, a string, null, true/false, or (by
// kind only) a list or an object. False, with `error`, when it is not one valid JSON value.
bool readValue(std::string_view text, JsonField& value, std::string& error);

} // namespace nanscope::json
