// json::readObjectFields and json::readValue, the log readers' one JSON decoder: Python's bare NaN /
// Infinity / -Infinity read as numbers (and only outside strings), numbers correctly rounded, a
// repeated key keeps its last value, nested values by kind, and damage named with its byte.

#include "core/importers/JsonFields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace nanscope;
using json::JsonField;

namespace {

const JsonField* field(const std::vector<JsonField>& fields, const std::string& key)
{
    for (const JsonField& f : fields)
        if (f.key == key)
            return &f;
    return nullptr;
}

} // namespace

TEST(JsonFields, PythonsNonFiniteWordsAreNumbersAndQuotedOnesAreText)
{
    std::vector<JsonField> fields;
    std::string error;
    ASSERT_TRUE(json::readObjectFields(R"({"loss": NaN, "grad_norm": Infinity, "min": -Infinity, "s": "NaN"})", fields,
                                       error))
        << error;
    ASSERT_EQ(fields.size(), 4u);
    EXPECT_EQ(fields[0].key, "loss") << "file order";
    EXPECT_TRUE(fields[0].kind == JsonField::Kind::Number && std::isnan(fields[0].number));
    EXPECT_TRUE(std::isinf(field(fields, "grad_norm")->number) && field(fields, "grad_norm")->number > 0);
    EXPECT_TRUE(std::isinf(field(fields, "min")->number) && field(fields, "min")->number < 0);
    EXPECT_EQ(field(fields, "s")->kind, JsonField::Kind::Text);
    EXPECT_EQ(field(fields, "s")->text, "NaN");
}

TEST(JsonFields, NumbersReadBackBitForBitAsPythonWroteThem)
{
    // repr() of a double is its shortest round-trip text: reading it must give the same bits.
    std::mt19937_64 random(7);
    std::vector<JsonField> fields;
    std::string error;
    for (int i = 0; i < 20000; ++i) {
        uint64_t bits = random();
        double value;
        std::memcpy(&value, &bits, sizeof value);
        if (!std::isfinite(value))
            continue;
        char text[64];
        std::snprintf(text, sizeof text, "%.17g", value);
        ASSERT_TRUE(json::readObjectFields(std::string("{\"v\": ") + text + "}", fields, error)) << text << ": " << error;
        ASSERT_EQ(fields.size(), 1u);
        EXPECT_EQ(fields[0].number, value) << text;
    }
    ASSERT_TRUE(json::readObjectFields(R"({"big": 18446744073709551616, "tiny": 1e-400, "neg": -7})", fields, error))
        << error;
    EXPECT_EQ(field(fields, "big")->number, 18446744073709551616.0);
    EXPECT_EQ(field(fields, "tiny")->number, 0.0) << "underflow reads as zero, as in Python";
    EXPECT_EQ(field(fields, "neg")->number, -7.0);
    // Python writes an overflow as Infinity, never as 1e999: such a number is damage, as it was to Qt.
    EXPECT_FALSE(json::readObjectFields(R"({"huge": 1e999})", fields, error));
    EXPECT_NE(error.find("byte 9"), std::string::npos) << error;
}

TEST(JsonFields, NestedValuesByKindAndARepeatedKeyKeepsItsLastValue)
{
    std::vector<JsonField> fields;
    std::string error;
    ASSERT_TRUE(json::readObjectFields(R"({"a": 1, "h": {"bins": [1, 2]}, "l": [3, {"x": 4}], "n": null, "b": true, "a": 2})",
                                       fields, error))
        << error;
    ASSERT_EQ(fields.size(), 5u) << "the nested object's and list's members are not fields";
    EXPECT_EQ(field(fields, "h")->kind, JsonField::Kind::Object);
    EXPECT_EQ(field(fields, "l")->kind, JsonField::Kind::List);
    EXPECT_EQ(field(fields, "n")->kind, JsonField::Kind::Null);
    EXPECT_EQ(field(fields, "b")->kind, JsonField::Kind::Bool);
    EXPECT_EQ(field(fields, "a")->number, 2.0);
    EXPECT_EQ(fields.back().key, "a") << "where its last value stands";
    EXPECT_EQ(std::string(json::kindName(JsonField::Kind::List)), "list");
}

TEST(JsonFields, DamageIsNamedWithItsByte)
{
    std::vector<JsonField> fields;
    std::string error;
    EXPECT_FALSE(json::readObjectFields(R"({"loss": 1.5, "step": })", fields, error));
    EXPECT_NE(error.find("byte 22"), std::string::npos) << error;
    EXPECT_FALSE(json::readObjectFields(R"({"loss": 1.5} trailing)", fields, error));
    EXPECT_NE(error.find("more after the value ends (byte 14)"), std::string::npos) << error;
    EXPECT_FALSE(json::readObjectFields("[1, 2]", fields, error));
    EXPECT_EQ(error, "not a JSON object");
    EXPECT_FALSE(json::readObjectFields("12", fields, error));
    EXPECT_EQ(error, "not a JSON object");
    EXPECT_FALSE(json::readObjectFields(R"({"x": Nope})", fields, error));
    EXPECT_FALSE(json::readObjectFields(R"({"x": "cut off)", fields, error));
    EXPECT_FALSE(json::readObjectFields("", fields, error));
}

// A log entry is untrusted bytes: nesting as deep as the file allows is an entry read by kind (the
// recursive parser it first used crashed on 200,000 lists, where Qt's had refused them).
TEST(JsonFields, DeepNestingIsReadWithoutRecursion)
{
    std::vector<JsonField> fields;
    std::string error;
    const std::string deep = "{\"step\": 2, \"x\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
    ASSERT_TRUE(json::readObjectFields(deep, fields, error)) << error;
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(fields[1].kind, JsonField::Kind::List);
}

TEST(JsonFields, ALoneValue)
{
    JsonField value;
    std::string error;
    ASSERT_TRUE(json::readValue(" \"a \\\"quoted\\\" name\" ", value, error)) << error;
    EXPECT_EQ(value.kind, JsonField::Kind::Text);
    EXPECT_EQ(value.text, "a \"quoted\" name");
    ASSERT_TRUE(json::readValue("-Infinity", value, error)) << error;
    EXPECT_TRUE(std::isinf(value.number) && value.number < 0);
    ASSERT_TRUE(json::readValue(R"({"k": [1]})", value, error)) << error;
    EXPECT_EQ(value.kind, JsonField::Kind::Object);
    EXPECT_EQ(value.key, "") << "an object's members are not read as a lone value";
    EXPECT_FALSE(json::readValue("1 2", value, error));
}

// A JSON-lines log that nests its metrics ({"train": {"loss": ...}}) is read to its leaves, named by
// their keys; a list stops the descent, and so does a fifth level.
TEST(JsonFields, FlattenedFieldsNameNestedValuesByTheirKeys)
{
    std::vector<json::JsonField> fields;
    std::string error;
    ASSERT_TRUE(json::readFlattenedObjectFields(
        R"({"step": 3, "train": {"loss": NaN, "acc": [0.5, {"x": 1}], "opt": {"lr": 1e-4, "name": "adam"}},)"
        R"( "a": {"b": {"c": {"d": {"e": 1}}}}})",
        fields, error))
        << error;
    auto field = [&](const char* key) { return json::findField(fields, key); };
    for (const char* key : {"train/loss", "train/opt/lr", "train/opt/name", "train/acc", "train", "a/b/c/d"})
        ASSERT_NE(field(key), nullptr) << key;
    ASSERT_NE(field("train/loss"), nullptr);
    EXPECT_TRUE(std::isnan(field("train/loss")->number));
    ASSERT_NE(field("train/opt/lr"), nullptr);
    EXPECT_EQ(field("train/opt/lr")->number, 1e-4);
    EXPECT_EQ(field("train/opt/name")->kind, json::JsonField::Kind::Text);
    EXPECT_EQ(field("train/acc")->kind, json::JsonField::Kind::List);
    EXPECT_EQ(field("train/acc/x"), nullptr) << "nothing inside a list";
    EXPECT_EQ(field("train")->kind, json::JsonField::Kind::Object);
    EXPECT_NE(field("a/b/c/d"), nullptr);
    EXPECT_EQ(field("a/b/c/d/e"), nullptr) << "four levels deep at most";
    // The unflattened reader is unchanged: nested values stay their object.
    ASSERT_TRUE(json::readObjectFields(R"({"step": 3, "train": {"loss": 1}})", fields, error));
    EXPECT_EQ(fields.size(), 2u);
}
