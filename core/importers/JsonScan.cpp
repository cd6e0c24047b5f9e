#include "core/importers/JsonScan.h"

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

} // namespace

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
