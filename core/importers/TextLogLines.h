#pragma once

// Reading the lines of training text logs (internal to TrainingTextLogReader): which line is which,
// and the numbers in it. Numbers go through std::from_chars, not strtod: a Qt application runs
// under the user's locale, where strtod may want "0,5".

#include <charconv>
#include <cstdint>
#include <limits>
#include <locale>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace nanscope::textlog {

// Steps, iterations and counts a log may state. Anything larger is damage, not a run, and is
// ignored, so that step arithmetic (step + 1, step * window) can never overflow.
constexpr int64_t kLargestStep = int64_t(1) << 50;

inline bool isWordChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Where key starts in line as a word of its own on the left ("step=" but not "global_step="),
// from `from` on; npos if nowhere.
inline size_t findKey(std::string_view line, std::string_view key, size_t from = 0)
{
    for (size_t at = line.find(key, from); at != std::string_view::npos; at = line.find(key, at + 1))
        if (at == 0 || !isWordChar(line[at - 1]))
            return at;
    return std::string_view::npos;
}

inline size_t skipSpaces(std::string_view line, size_t at)
{
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t'))
        ++at;
    return at;
}

// The number at `at` (spaces skipped; "nan", "inf", "7.1E+00" and a leading '+' accepted), and
// where it ends.
inline std::optional<double> numberAt(std::string_view line, size_t at, size_t* end = nullptr)
{
    if (at > line.size())
        return std::nullopt;
    at = skipSpaces(line, at);
    if (at < line.size() && line[at] == '+')
        ++at;
    double value = 0;
    const auto [next, error] = std::from_chars(line.data() + at, line.data() + line.size(), value);
    if (error != std::errc())
        return std::nullopt;
    if (end)
        *end = size_t(next - line.data());
    return value;
}

// A non-negative integer no larger than kLargestStep.
inline std::optional<int64_t> integerAt(std::string_view line, size_t at, size_t* end = nullptr)
{
    if (at > line.size())
        return std::nullopt;
    at = skipSpaces(line, at);
    int64_t value = 0;
    const auto [next, error] = std::from_chars(line.data() + at, line.data() + line.size(), value);
    if (error != std::errc() || value < 0 || value > kLargestStep)
        return std::nullopt;
    if (end)
        *end = size_t(next - line.data());
    return value;
}

inline std::optional<double> numberAfter(std::string_view line, std::string_view key)
{
    const size_t at = findKey(line, key);
    return at == std::string_view::npos ? std::nullopt : numberAt(line, at + key.size());
}

inline std::optional<int64_t> integerAfter(std::string_view line, std::string_view key)
{
    const size_t at = findKey(line, key);
    return at == std::string_view::npos ? std::nullopt : integerAt(line, at + key.size());
}

inline std::string_view trimmed(std::string_view text)
{
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos)
        return {};
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Seconds of a leading "[2023-04-18 03:36:00,502]" (Python logging's asctime), counted as if UTC:
// only differences are used. NaN when the line has none.
inline double leadingTimestamp(std::string_view line)
{
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    if (line.size() < 25 || line[0] != '[' || line[5] != '-' || line[8] != '-' || line[11] != ' ' || line[14] != ':'
        || line[17] != ':' || (line[20] != ',' && line[20] != '.'))
        return kNone;
    auto field = [&](size_t at, size_t width) -> int64_t {
        int64_t value = 0;
        for (size_t i = at; i < at + width; ++i) {
            if (line[i] < '0' || line[i] > '9')
                return -1;
            value = value * 10 + (line[i] - '0');
        }
        return value;
    };
    const int64_t year = field(1, 4), month = field(6, 2), day = field(9, 2);
    const int64_t hour = field(12, 2), minute = field(15, 2), second = field(18, 2), millis = field(21, 3);
    if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || minute < 0 || second < 0
        || millis < 0)
        return kNone;
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil), so runs across midnight still subtract.
    const int64_t y = year - (month <= 2);
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yearOfEra = y - era * 400;
    const int64_t dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    const int64_t dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear;
    const int64_t days = era * 146097 + dayOfEra - 719468;
    return double(days * 86400 + hour * 3600 + minute * 60 + second) + double(millis) / 1000.0;
}

// ---- which line is which -------------------------------------------------------------------------

// Log lines begin with a logging prefix ("[2023-04-18 03:36:00,502] [INFO] ...", "[deepspeed]") or
// with the message itself; a line that only quotes one (a README, a SOURCE.md) begins otherwise.
inline bool startsLikeLogLine(std::string_view line, std::string_view message)
{
    const size_t first = skipSpaces(line, 0);
    return first < line.size()
        && (line[first] == '[' || (!message.empty() && line.compare(first, message.size(), message) == 0));
}

inline bool isOverflowLine(std::string_view line)
{
    return line.find("Skipping step") != std::string_view::npos && numberAfter(line, "Attempted loss scale:")
        && startsLikeLogLine(line, "");
}

inline bool isStepReport(std::string_view line)
{
    return integerAfter(line, "step=") && integerAfter(line, "skipped=") && startsLikeLogLine(line, "step=");
}

// " iteration      100/  500000 |": the iteration and, through fieldsStart, where its fields start.
inline std::optional<int64_t> megatronIteration(std::string_view line, size_t* fieldsStart = nullptr)
{
    const size_t at = findKey(line, "iteration");
    if (at == std::string_view::npos || line.find('|', at) == std::string_view::npos
        || !startsLikeLogLine(line, "iteration"))
        return std::nullopt;
    size_t end = 0;
    const std::optional<int64_t> iteration = integerAt(line, at + 9, &end);
    end = skipSpaces(line, end);
    if (!iteration || end >= line.size() || line[end] != '/' || !integerAt(line, end + 1))
        return std::nullopt;
    if (fieldsStart)
        *fieldsStart = line.find('|', end);
    return iteration;
}

inline bool isDsChatLossLine(std::string_view line)
{
    return line.rfind("Epoch: ", 0) == 0 && line.find(", Step: ") != std::string_view::npos
        && line.find("loss = ") != std::string_view::npos;
}

inline bool isTrainingLine(std::string_view line)
{
    return isOverflowLine(line) || isStepReport(line) || megatronIteration(line) || isDsChatLossLine(line);
}

// "Rank 3": lines other ranks repeat are read from rank 0 only.
inline bool fromOtherRank(std::string_view line)
{
    const std::optional<int64_t> rank = integerAfter(line, "Rank ");
    const std::optional<int64_t> dsChatRank = integerAfter(line, "Rank: ");
    return (rank && *rank != 0) || (dsChatRank && *dsChatRank != 0);
}

// A loss scale as people write it: 65536, 0.5.
inline std::string formatScale(double scale)
{
    std::ostringstream text;
    text.imbue(std::locale::classic());
    text << scale;
    return text.str();
}

} // namespace nanscope::textlog
