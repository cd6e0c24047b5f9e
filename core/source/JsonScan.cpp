#include "core/source/JsonScan.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace nanscope::jsonscan {

namespace {

// One past the closing quote of the string whose opening quote is at `quote`, or npos when the
// text ends inside it.
size_t stringEnd(std::string_view text, size_t quote)
{
    for (size_t i = quote + 1; i < text.size(); ++i) {
        if (text[i] == '\\')
            ++i; // the escaped character, whatever it is, cannot end the string
        else if (text[i] == '"')
            return i + 1;
    }
    return std::string_view::npos;
}

bool isWordCharacter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'
        || c == '+' || c == '-';
}

bool startsWordAt(std::string_view text, size_t position, std::string_view word)
{
    if (text.substr(position, word.size()) != word)
        return false;
    const size_t after = position + word.size();
    return after == text.size() || !isWordCharacter(text[after]);
}

} // namespace

std::string quoteNonFiniteTokens(std::string_view json)
{
    std::string out;
    out.reserve(json.size() + 64);
    // The text between replacements is copied in runs: a trainer_state.json of 100,000 entries
    // goes through here entry by entry, and copying it a character at a time took as long as Qt's
    // parse of it (bench_sources).
    size_t copiedUpTo = 0; // json[copiedUpTo, i) is still to be copied
    size_t i = 0;
    while (i < json.size()) {
        const char c = json[i];
        if (c == '"') {
            i = std::min(stringEnd(json, i), json.size());
            continue;
        }
        if (c != 'N' && c != 'I' && c != '-') { // the first letters of the three words
            ++i;
            continue;
        }
        // A word must start a token: "xNaN" is left for the JSON parser to reject.
        const bool tokenStart = i == 0 || !isWordCharacter(json[i - 1]);
        std::string_view sentinel;
        size_t length = 0;
        if (tokenStart && startsWordAt(json, i, "NaN")) {
            sentinel = kNaNSentinel;
            length = 3;
        } else if (tokenStart && startsWordAt(json, i, "Infinity")) {
            sentinel = kInfinitySentinel;
            length = 8;
        } else if (tokenStart && startsWordAt(json, i, "-Infinity")) {
            sentinel = kMinusInfinitySentinel;
            length = 9;
        }
        if (length == 0) {
            ++i;
            continue;
        }
        out.append(json.substr(copiedUpTo, i - copiedUpTo));
        // The sentinel's control character is written as \u0001: a raw one is not valid JSON.
        out += "\"\\u0001";
        out.append(sentinel.substr(1));
        out += '"';
        i += length;
        copiedUpTo = i;
    }
    out.append(json.substr(copiedUpTo));
    return out;
}

bool nonFiniteSentinel(std::string_view text, double& value)
{
    if (text == kNaNSentinel)
        value = std::numeric_limits<double>::quiet_NaN();
    else if (text == kInfinitySentinel)
        value = std::numeric_limits<double>::infinity();
    else if (text == kMinusInfinitySentinel)
        value = -std::numeric_limits<double>::infinity();
    else
        return false;
    return true;
}

size_t skipWhitespace(std::string_view text, size_t position)
{
    while (position < text.size()
        && (text[position] == ' ' || text[position] == '\n' || text[position] == '\r' || text[position] == '\t'))
        ++position;
    return position;
}

ValueExtent scanValue(std::string_view text, size_t begin)
{
    if (begin >= text.size())
        return { ValueExtent::Kind::CutOff, text.size() };
    const char first = text[begin];
    if (first == '"') {
        const size_t end = stringEnd(text, begin);
        if (end == std::string_view::npos)
            return { ValueExtent::Kind::CutOff, text.size() };
        return { ValueExtent::Kind::Complete, end };
    }
    if (first != '{' && first != '[') {
        size_t end = begin;
        while (end < text.size() && text[end] != ',' && text[end] != '}' && text[end] != ']' && text[end] != ' '
            && text[end] != '\n' && text[end] != '\r' && text[end] != '\t')
            ++end;
        // A number at the very end of the text may have lost digits; only a delimiter proves it whole.
        return { end == text.size() ? ValueExtent::Kind::CutOff : ValueExtent::Kind::Complete, end };
    }

    std::vector<char> closers;
    size_t i = begin;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '"') {
            const size_t end = stringEnd(text, i);
            if (end == std::string_view::npos)
                return { ValueExtent::Kind::CutOff, text.size() };
            i = end;
            continue;
        }
        if (c == '{' || c == '[') {
            closers.push_back(c == '{' ? '}' : ']');
        } else if (c == '}' || c == ']') {
            if (closers.empty() || closers.back() != c)
                return { ValueExtent::Kind::MismatchedBracket, i };
            closers.pop_back();
            if (closers.empty())
                return { ValueExtent::Kind::Complete, i + 1 };
        }
        ++i;
    }
    return { ValueExtent::Kind::CutOff, text.size() };
}

} // namespace nanscope::jsonscan
