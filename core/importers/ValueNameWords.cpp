#include "core/importers/ValueNameWords.h"

#include "core/importers/AsciiText.h"

namespace nanscope::textrecord {

namespace {

// Whether the last word of a name says it is no measured value:
// - a source file and line ("utils.py:460", "logging.py:157");
// - a process's or a place's number ("(TaskRunner pid=2021996)", "File ..., line 12", "port 8265");
// - prose: a metric's name does not end in a function word ("remaining items are 11",
//   "... and 7 more").
bool lastWordSaysNoValue(std::string_view word)
{
    using namespace std::string_view_literals;
    // Most names are longer than any word below and hold no '.': decided without a look-up.
    if (word.size() > 6 && word.find('.') == std::string_view::npos)
        return word.size() >= 3 && word.substr(word.size() - 3) == "..."sv;
    static constexpr std::string_view kExtensions[] = {".py"sv, ".cc"sv, ".cpp"sv, ".c"sv, ".h"sv,
                                                       ".rs"sv, ".go"sv, ".js"sv, ".java"sv};
    for (std::string_view extension : kExtensions)
        if (word.size() > extension.size() && word.substr(word.size() - extension.size()) == extension)
            return true;
    if (word.size() >= 3 && word.substr(word.size() - 3) == "..."sv)
        return true;
    static constexpr std::string_view kWords[] = {
        "pid"sv, "tid"sv, "port"sv, "line"sv, "lineno"sv, "thread"sv, "id"sv, "is"sv, "are"sv, "was"sv, "were"sv,
        "be"sv, "of"sv, "to"sv, "in"sv, "at"sv, "for"sv, "with"sv, "and"sv, "or"sv, "by"sv, "from"sv, "on"sv,
        "the"sv, "a"sv, "an"sv, "as"sv, "than"sv, "that"sv, "this"sv,
        // a unit is no name: a profiler's "1.10 Gb   0 b" columns
        "b"sv, "kb"sv, "mb"sv, "gb"sv, "tb"sv, "kib"sv, "mib"sv, "gib"sv, "ns"sv, "us"sv, "ms"sv, "sec"sv};
    if (word.size() > 6 || word.empty())
        return false;
    const char first = ascii::lower(word.front());
    for (std::string_view other : kWords)
        if (other.size() == word.size() && other.front() == first && ascii::equalsIgnoringCase(word, other))
            return true;
    return false;
}

} // namespace

bool isNotAValueName(std::string_view name)
{
    // One letter is a variable in prose or code ("x:0:0" in /etc/passwd), not a metric's name.
    if (name.size() < 2)
        return true;
    const size_t space = name.find_last_of(" \t");
    return lastWordSaysNoValue(space == std::string_view::npos ? name : name.substr(space + 1));
}

} // namespace nanscope::textrecord
