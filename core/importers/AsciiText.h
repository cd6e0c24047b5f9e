#pragma once

// The character tests the text-log readers ask of every byte, in ASCII alone: a log's names and
// numbers are ASCII, and the C library's locale-aware tests would cost a call per byte.

#include <string_view>

namespace nanscope::ascii {

constexpr bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

constexpr bool isLetter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

constexpr char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
}

// Whether `text` is `lowercaseWord` in any case; `lowercaseWord` is written in lower case.
constexpr bool equalsIgnoringCase(std::string_view text, std::string_view lowercaseWord)
{
    if (text.size() != lowercaseWord.size())
        return false;
    for (size_t i = 0; i < text.size(); ++i)
        if (lower(text[i]) != lowercaseWord[i])
            return false;
    return true;
}

} // namespace nanscope::ascii
