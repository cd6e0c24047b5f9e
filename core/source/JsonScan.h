#pragma once

// Just enough knowledge of JSON's structure to cut a damaged document into values that Qt's parser
// can read one at a time, so a file cut off or damaged in one place still gives everything before
// the damage. Nothing here decodes a value: QJsonDocument does that.

#include <cstddef>
#include <string>
#include <string_view>

namespace nanscope::jsonscan {

// Python's json module writes NaN, Infinity and -Infinity as bare words, which strict JSON (and
// Qt) rejects. Outside strings they become these strings, which nonFiniteSentinel() maps back.
inline constexpr std::string_view kNaNSentinel = "\u0001nanscope:NaN";
inline constexpr std::string_view kInfinitySentinel = "\u0001nanscope:Infinity";
inline constexpr std::string_view kMinusInfinitySentinel = "\u0001nanscope:-Infinity";

// `json` with every bare NaN / Infinity / -Infinity token (outside strings) written as the quoted
// sentinel above. Strings, including ones that read "NaN", are left as they are.
std::string quoteNonFiniteTokens(std::string_view json);

// The value a sentinel stands for, or false when `text` is no sentinel.
bool nonFiniteSentinel(std::string_view text, double& value);

size_t skipWhitespace(std::string_view text, size_t position);

// Where the JSON value that starts at `begin` ends: one past a closing quote or bracket, or the
// first delimiter after a bare word or number. Brackets are matched by kind and strings are
// skipped with their escapes, so a brace inside a string never counts.
struct ValueExtent {
    enum class Kind { Complete, CutOff, MismatchedBracket };
    Kind kind = Kind::Complete;
    size_t end = 0; // Complete: one past the value; otherwise where the scan stopped
};
ValueExtent scanValue(std::string_view text, size_t begin);

} // namespace nanscope::jsonscan
