// jsonscan::quoteNonFiniteTokens: Python's bare NaN / Infinity / -Infinity, outside strings and as
// whole tokens only, become quoted sentinels; every other byte is copied as it is.

#include "core/source/JsonScan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace nanscope;

namespace {

const std::string kNaN = "\"\\u0001nanscope:NaN\"";
const std::string kInf = "\"\\u0001nanscope:Infinity\"";
const std::string kMinusInf = "\"\\u0001nanscope:-Infinity\"";

} // namespace

TEST(JsonScan, QuotesBareNonFiniteTokens)
{
    using jsonscan::quoteNonFiniteTokens;
    EXPECT_EQ(quoteNonFiniteTokens(R"({"a": NaN, "b": Infinity, "c": -Infinity})"),
              "{\"a\": " + kNaN + ", \"b\": " + kInf + ", \"c\": " + kMinusInf + "}");
    EXPECT_EQ(quoteNonFiniteTokens("NaN"), kNaN) << "at the very start and end";
    EXPECT_EQ(quoteNonFiniteTokens("[NaN,NaN]"), "[" + kNaN + "," + kNaN + "]");
    EXPECT_EQ(quoteNonFiniteTokens("[-Infinity]"), "[" + kMinusInf + "]");
}

TEST(JsonScan, LeavesStringsAndPartWordsAlone)
{
    using jsonscan::quoteNonFiniteTokens;
    for (const std::string text : {R"({"NaN": "Infinity"})", R"(["a \" NaN", -1.5e-3, 12])", "[xNaN, NaNx, Infinit, -Inf]",
                                   "[1e-5, -0.0, Nope, In]", R"(["cut off NaN)", "", "-", "N", "I"})
        EXPECT_EQ(quoteNonFiniteTokens(text), text);
    EXPECT_EQ(quoteNonFiniteTokens(R"({"s": "a\\", "v": NaN})"), "{\"s\": \"a\\\\\", \"v\": " + kNaN + "}")
        << "an escaped backslash ends the string before the quote";
}

TEST(JsonScan, SentinelsReadBack)
{
    double value = 0;
    ASSERT_TRUE(jsonscan::nonFiniteSentinel(jsonscan::kMinusInfinitySentinel, value));
    EXPECT_TRUE(std::isinf(value) && value < 0);
    EXPECT_FALSE(jsonscan::nonFiniteSentinel("NaN", value));
}
