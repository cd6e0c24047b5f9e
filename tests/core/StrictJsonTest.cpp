// The strict JSON tree (safetensors headers, torch.export archives) (core/checkpoint/StrictJson, RapidJSON underneath): the
// tree a reader needs, and every strictness the hand-written parser it replaced had, on untrusted
// bytes: no repeated key, no lone surrogate, 64-bit integers, bounded depth without recursion.
#include "core/checkpoint/StrictJson.h"

#include <gtest/gtest.h>

using namespace nanscope::strictjson;

TEST(StrictJson, ATensorEntryReadsAsATree)
{
    JsonValue json;
    std::string error;
    ASSERT_TRUE(parse(R"({"__metadata__": {"format": "pt"}, "w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}})",
                            json, error))
        << error;
    ASSERT_EQ(json.kind, JsonValue::Kind::Object);
    ASSERT_EQ(json.members.size(), 2u);
    const JsonValue& w = json.members[1].second;
    EXPECT_EQ(json.members[1].first, "w");
    EXPECT_EQ(w.members[0].second.text, "BF16");
    ASSERT_EQ(w.members[1].second.items.size(), 2u);
    EXPECT_TRUE(w.members[1].second.items[1].numberIsInteger);
    EXPECT_EQ(w.members[1].second.items[1].integer, 3);
    EXPECT_EQ(w.members[2].second.items[1].integer, 12);
}

TEST(StrictJson, StrictOnWhatAHostileFileHolds)
{
    JsonValue json;
    std::string error;
    const std::pair<std::string, std::string> refused[] = {
        {R"({"w": 1, "w": 2})", "duplicate JSON key \"w\""},
        {R"({"\udc00": 1})", "lone low surrogate"},
        {R"({"\ud800": 1})", "surrogate"},
        {R"({"w": [18446744073709551616]})", "does not fit 64 bits"},
        {R"({"w": [6-2]})", "at byte"},
        {R"({"w": [01]})", "at byte"},
        {R"({"w": 1} x)", "at byte"},
        {std::string(100000, '[') + std::string(100000, ']'), "nested too deep"},
        {"", "at byte 0"},
    };
    for (const auto& [text, why] : refused) {
        EXPECT_FALSE(parse(text, json, error)) << text.substr(0, 40);
        EXPECT_NE(error.find(why), std::string::npos) << text.substr(0, 40) << ": " << error;
    }
    EXPECT_TRUE(parse(std::string(64, '[') + std::string(64, ']'), json, error)) << "64 levels are allowed: " << error;
}
