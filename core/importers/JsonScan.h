#pragma once

// Just enough knowledge of JSON's structure to cut a damaged document into values that JsonFields
// decodes one at a time, so a file cut off or damaged in one place still gives everything before
// the damage (and a damaged entry is skipped, not the rest of the file). Nothing here decodes a
// value.

#include <cstddef>
#include <string>
#include <string_view>

namespace nanscope::jsonscan {

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
