#include "core/importers/StepTextLogReader.h"

#include "core/run/RunFormat.h"

#include "core/importers/AsciiText.h"
#include "core/importers/ScalarNames.h"
#include "core/importers/SkippedStepEvents.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

namespace nanscope {

namespace {

constexpr size_t kMostLineBytes = 64 * 1024;  // a longer "line" is no log line: skipped unread
constexpr size_t kDetectBytes = size_t(1) << 20; // past a printed training script of ~600 lines
constexpr int kDetectLines = 3;
constexpr size_t kMostKeyWords = 3;

// Reads a file line by line without ever holding more than kMostLineBytes of one line.
class BoundedLines
{
public:
    explicit BoundedLines(const std::string& path)
        : m_in(path, std::ios::binary)
    {
    }
    bool good() const { return bool(m_in) || m_in.eof(); }
    uint64_t bytesRead() const { return m_bytes; }
    bool sawNul() const { return m_sawNul; }

    // The next line (without its end), false at the end of the file.
    bool next(std::string& line)
    {
        line.clear();
        bool tooLong = false;
        for (;;) {
            if (m_at == m_size) {
                m_in.read(m_buffer, sizeof m_buffer);
                m_size = size_t(m_in.gcount());
                m_at = 0;
                if (m_size == 0)
                    return !line.empty() || tooLong;
                m_bytes += m_size;
            }
            const char* begin = m_buffer + m_at;
            const char* end = static_cast<const char*>(std::memchr(begin, '\n', m_size - m_at));
            const size_t take = size_t((end ? end : m_buffer + m_size) - begin);
            if (std::memchr(begin, '\0', take))
                m_sawNul = true;
            if (!tooLong && line.size() + take <= kMostLineBytes)
                line.append(begin, take);
            else {
                tooLong = true;
                line.clear();
            }
            m_at += take;
            if (end) {
                ++m_at;
                if (tooLong)
                    line.clear();
                return true;
            }
        }
    }

private:
    std::ifstream m_in;
    char m_buffer[64 * 1024];
    size_t m_size = 0, m_at = 0;
    uint64_t m_bytes = 0;
    bool m_sawNul = false;
};

struct StepLine
{
    int64_t step = 0;
    std::vector<std::pair<std::string, double>> pairs;
    bool evaluation = false;
};

using ascii::isDigit;
using ascii::isLetter;
using ascii::lower;

bool startsWithWord(std::string_view s, size_t at, std::string_view word)
{
    if (s.size() - at < word.size())
        return false;
    for (size_t i = 0; i < word.size(); ++i)
        if (lower(s[at + i]) != word[i])
            return false;
    return true;
}

void skipSpaces(std::string_view s, size_t& i)
{
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        ++i;
}

bool skipTimestamp(std::string_view s, size_t& i)
{
    if (s.size() - i >= 19 && isDigit(s[i]) && isDigit(s[i + 3]) && s[i + 4] == '-' && s[i + 7] == '-' &&
        (s[i + 10] == ' ' || s[i + 10] == 'T') && s[i + 13] == ':' && s[i + 16] == ':') {
        i += 19;
        while (i < s.size() && (isDigit(s[i]) || s[i] == '.' || s[i] == ',' || s[i] == 'Z'))
            ++i;
        skipSpaces(s, i);
        return true;
    }
    return false;
}

bool skipTag(std::string_view s, size_t& i)
{
    if (i >= s.size() || s[i] != '[')
        return false;
    const size_t close = s.find(']', i);
    if (close == std::string_view::npos || close - i > 64)
        return false;
    i = close + 1;
    skipSpaces(s, i);
    if (i < s.size() && s[i] == ':')
        ++i;
    skipSpaces(s, i);
    return true;
}

// A logger's fields before its message: "- root - INFO - ", "INFO:", " | INFO | ".
bool skipLoggerFields(std::string_view s, size_t& i)
{
    for (std::string_view level : {"INFO", "WARNING", "DEBUG"}) {
        const size_t at = s.substr(i, 96).find(level);
        if (at == std::string_view::npos)
            continue;
        size_t j = i + at + level.size();
        while (j < s.size() && (s[j] == ' ' || s[j] == '-' || s[j] == ':' || s[j] == '|' || s[j] == ']'))
            ++j;
        i = j;
        return true;
    }
    return false;
}

// A quote mark, time stamps ("2023-03-22 09:30:39", ISO or with a comma), bracketed tags
// ("[rank0]:[titan]"), a logger's level field: whatever comes before "step N" on a log line.
size_t skipPrefix(std::string_view s)
{
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '>'))
        ++i;
    for (int parts = 0; parts < 8; ++parts)
        if (!skipTag(s, i) && !skipTimestamp(s, i))
            break;
    const size_t before = i;
    if (!startsWithWord(s, i, "step") && !startsWithWord(s, i, "iter") && !skipLoggerFields(s, i))
        i = before;
    return i;
}

enum class TokenKind { Word, Number, Placeholder, Other };

// A token as a value: a number with an optional unit, or nan / inf. A NaN or Inf with a unit glued
// to it ("nanms") is a placeholder a script prints before it has a value.
TokenKind classify(std::string_view token, double& value)
{
    if (token.empty())
        return TokenKind::Other;
    size_t i = 0;
    bool negative = false;
    if (token[0] == '+' || token[0] == '-') {
        negative = token[0] == '-';
        ++i;
    }
    if (i < token.size() && (lower(token[i]) == 'n' || lower(token[i]) == 'i')) {
        const std::string_view rest = token.substr(i);
        size_t length = 0;
        if (startsWithWord(rest, 0, "nan"))
            length = 3, value = std::numeric_limits<double>::quiet_NaN();
        else if (startsWithWord(rest, 0, "infinity"))
            length = 8, value = std::numeric_limits<double>::infinity();
        else if (startsWithWord(rest, 0, "inf"))
            length = 3, value = std::numeric_limits<double>::infinity();
        if (length == 0)
            return i == 0 && (isLetter(token[0]) || token[0] == '_') ? TokenKind::Word : TokenKind::Other;
        if (negative)
            value = -value;
        return rest.size() == length ? TokenKind::Number : TokenKind::Placeholder;
    }
    if (isLetter(token[0]) || token[0] == '_')
        return TokenKind::Word;
    if (i >= token.size() || !(isDigit(token[i]) || (token[i] == '.' && i + 1 < token.size() && isDigit(token[i + 1]))))
        return TokenKind::Other;
    // Digits, a fraction, an exponent; then nothing or a unit.
    size_t j = i;
    while (j < token.size() && isDigit(token[j]))
        ++j;
    if (j < token.size() && token[j] == '.') {
        ++j;
        while (j < token.size() && isDigit(token[j]))
            ++j;
    }
    if (j < token.size() && lower(token[j]) == 'e' && j + 1 < token.size() &&
        (isDigit(token[j + 1]) || ((token[j + 1] == '+' || token[j + 1] == '-') && j + 2 < token.size() && isDigit(token[j + 2])))) {
        j += 2;
        while (j < token.size() && isDigit(token[j]))
            ++j;
    }
    const std::string_view unit = token.substr(j);
    if (!(unit.empty() || unit == "ms" || unit == "s" || unit == "%"))
        return TokenKind::Other;
    value = std::strtod(std::string(token.substr(0, j)).c_str(), nullptr);
    return TokenKind::Number;
}

// The `name value` pairs of s from i on, tokens outside parentheses; `|` and `,` end a name,
// `:` and `=` bind one.
void collectPairs(std::string_view s, size_t i, StepLine& line)
{
    std::vector<std::string> keyWords;
    std::string token;
    int depth = 0;
    auto flush = [&] {
        if (token.empty())
            return;
        double value = 0;
        switch (classify(token, value)) {
        case TokenKind::Word:
            keyWords.push_back(token);
            if (keyWords.size() > kMostKeyWords)
                keyWords.erase(keyWords.begin());
            break;
        case TokenKind::Number:
            if (!keyWords.empty()) {
                std::string name = keyWords.front();
                for (size_t k = 1; k < keyWords.size(); ++k)
                    name += " " + keyWords[k];
                line.pairs.emplace_back(std::move(name), value);
            }
            keyWords.clear();
            break;
        case TokenKind::Placeholder:
        case TokenKind::Other:
            keyWords.clear();
            break;
        }
        token.clear();
    };
    for (; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '(') {
            flush();
            ++depth;
            continue;
        }
        if (c == ')') {
            depth = std::max(0, depth - 1);
            continue;
        }
        if (depth > 0)
            continue;
        if (c == ' ' || c == '\t' || c == '\r') {
            flush();
        } else if (c == ',' && !token.empty() && std::all_of(token.begin(), token.end(), isDigit) && i + 3 < s.size() &&
                   isDigit(s[i + 1]) && isDigit(s[i + 2]) && isDigit(s[i + 3]) &&
                   (i + 4 >= s.size() || !isDigit(s[i + 4]))) {
            continue; // a thousands separator: "tps: 5,856"
        } else if (c == '|' || c == ',' || c == ';') {
            flush();
            keyWords.clear();
        } else if (c == ':' || c == '=') {
            flush();
        } else {
            token += c;
        }
    }
    flush();
}

std::optional<StepLine> parseUpdateKeyedLine(std::string_view s);

std::optional<StepLine> parseStepLine(std::string_view s)
{
    size_t i = skipPrefix(s);
    size_t keyword = 0;
    for (std::string_view word : {std::string_view("iteration"), std::string_view("iter"), std::string_view("step")})
        if (startsWithWord(s, i, word)) {
            keyword = word.size();
            break;
        }
    if (keyword == 0)
        return parseUpdateKeyedLine(s);
    i += keyword;
    if (i < s.size() && (isLetter(s[i]) || s[i] == '_'))
        return std::nullopt; // "steps", "step_avg": another word
    skipSpaces(s, i);
    if (i < s.size() && (s[i] == ':' || s[i] == '='))
        ++i;
    skipSpaces(s, i);
    size_t digits = 0;
    int64_t step = 0;
    while (i < s.size() && isDigit(s[i]) && digits < 15) {
        step = step * 10 + (s[i] - '0');
        ++i;
        ++digits;
    }
    if (digits == 0 || (i < s.size() && (isDigit(s[i]) || isLetter(s[i]) || s[i] == '.')))
        return std::nullopt;
    skipSpaces(s, i);
    if (i < s.size() && s[i] == '/') { // "step 1234/19560"
        ++i;
        skipSpaces(s, i);
        while (i < s.size() && isDigit(s[i]))
            ++i;
    }

    StepLine line;
    line.step = step;
    collectPairs(s, i, line);
    if (line.pairs.empty())
        return std::nullopt;
    for (const auto& [name, value] : line.pairs)
        if (name.size() >= 3 && lower(name[0]) == 'v' && lower(name[1]) == 'a' && lower(name[2]) == 'l')
            line.evaluation = true;
    if (line.evaluation)
        for (auto& [name, value] : line.pairs) {
            std::string lowered;
            for (char c : name)
                lowered += lower(c);
            if (lowered == "train loss" || lowered == "train_loss" || lowered == "loss")
                name = "train_loss_eval"; // the evaluation's estimate, not the step's loss
        }
    return line;
}

// fairseq's progress lines key a step by the update count, not by a leading "step N":
//   ... | INFO | train_inner | epoch 001:    100 / 2952087 loss=16.348, ..., num_updates=100, lr=1e-06, gnorm=4.215, ...
//   | epoch 001:    450 / 1891 loss=11.521, ..., num_updates=445, ...          (before fairseq 0.10)
//   ... | INFO | valid | epoch 145 | valid on 'valid' subset | loss 12.144 | ... | num_updates 40860 | ...
// The batch counter ("100 / 2952087") is not the step: skipped fp16 updates do not count. An
// epoch's summary ("| train | epoch 145 | loss 3.141 | ...") repeats averages at its last update:
// not a step. A validation line's names are kept as valid_<name> (valid_loss is the eval loss).
std::optional<StepLine> parseUpdateKeyedLine(std::string_view s)
{
    const size_t updates = s.find("num_updates");
    if (updates == std::string_view::npos)
        return std::nullopt;
    const bool validation = s.find("valid on") != std::string_view::npos;
    size_t from = std::string_view::npos;
    if (validation) {
        from = s.find("subset");
    } else {
        // "epoch NNN:" then "a / b": a progress line (a summary has "epoch NNN |").
        for (size_t at = s.find("epoch"); at != std::string_view::npos && at < updates; at = s.find("epoch", at + 5)) {
            size_t i = at + 5;
            skipSpaces(s, i);
            const size_t digitsAt = i;
            while (i < s.size() && isDigit(s[i]))
                ++i;
            if (i > digitsAt && i < s.size() && s[i] == ':') {
                from = i + 1;
                skipSpaces(s, from);
                while (from < s.size() && (isDigit(s[from]) || s[from] == ' ' || s[from] == '/'))
                    ++from;
                break;
            }
        }
    }
    if (from == std::string_view::npos)
        return std::nullopt;
    StepLine line;
    collectPairs(s, from, line);
    std::optional<double> step;
    std::vector<std::pair<std::string, double>> kept;
    for (auto& [name, value] : line.pairs) {
        if (name == "num_updates") {
            step = value;
            continue;
        }
        if (validation && name.rfind("valid", 0) != 0 && name.rfind("best", 0) != 0)
            name = "valid_" + name;
        kept.emplace_back(std::move(name), value);
    }
    if (!step || !std::isfinite(*step) || *step < 0 || kept.empty())
        return std::nullopt;
    line.step = int64_t(*step);
    line.pairs = std::move(kept);
    line.evaluation = validation;
    return line;
}

// A loss scaler's own lines between the step lines: fairseq's "NOTE: overflow detected, setting
// loss scale to: 16384.0" (or "gradient overflow detected, ignoring gradient, ..."), whose update
// was skipped, and "FloatingPointError: Minimum loss scale reached", which ends the training.
// Placed at the last step line before them.
void noteLossScaleLine(std::string_view line, const std::optional<int64_t>& lastStep, ScalarLog& log)
{
    const int64_t step = lastStep.value_or(0);
    if (line.find("overflow detected") != std::string_view::npos) {
        const size_t to = line.find("loss scale to:");
        if (to == std::string_view::npos)
            return;
        double scale = 0;
        size_t i = to + 14;
        skipSpaces(line, i);
        size_t end = i;
        while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end])))
            ++end;
        if (classify(line.substr(i, end - i), scale) != TokenKind::Number)
            return;
        char text[64];
        std::snprintf(text, sizeof text, "%g", scale);
        log.events.push_back({step, runformat::event::kLossScaleDecrease,
                              std::string("gradient overflow after step ") + std::to_string(step) +
                                  ": update skipped, loss scale set to " + text});
    } else if (line.find("Minimum loss scale reached") != std::string_view::npos) {
        log.events.push_back({step, runformat::event::kNote,
                              "training stopped after step " + std::to_string(step) +
                                  ": minimum loss scale reached (the loss scaler could not find a scale without "
                                  "overflow: the loss is exploding)"});
    }
}

} // namespace

bool looksLikeStepTextLog(const std::string& path)
{
    BoundedLines lines(path);
    std::string line;
    int found = 0;
    while (lines.bytesRead() <= kDetectBytes && lines.next(line)) {
        if (lines.sawNul())
            return false;
        if (parseStepLine(line) && ++found >= kDetectLines)
            return true;
    }
    return false;
}

Result<ScalarLog> readStepTextLog(const std::string& path)
{
    BoundedLines lines(path);
    if (!lines.good())
        return Error{path + ": cannot be read"};
    ScalarLog log;
    log.path = path;
    log.format = "training log (step lines)";
    std::string line;
    uint64_t lineNumber = 0, stepLines = 0, otherLines = 0;
    std::optional<int64_t> lastStep;
    while (lines.next(line)) {
        ++lineNumber;
        if (lines.sawNul() && stepLines == 0)
            return Error{path + ": a binary file (a NUL byte by line " + std::to_string(lineNumber) +
                         "), not a text log"};
        if (line.empty())
            continue; // blank, or longer than any log line (BoundedLines drops it)
        auto parsed = parseStepLine(line);
        if (!parsed) {
            ++otherLines;
            noteLossScaleLine(line, lastStep, log);
            continue;
        }
        ++stepLines;
        lastStep = parsed->step;
        for (const auto& [name, value] : parsed->pairs) {
            auto& points = log.series[name];
            // A step printed again (every rank prints it; a log that repeats its last line): once.
            if (!points.empty() && points.back().step == parsed->step)
                continue;
            points.push_back(ScalarPoint{parsed->step, value});
        }
    }
    if (stepLines == 0)
        return Error{path + ": no training step lines (\"step N ... loss X\" or \"iter N: loss X\") in its " +
                     std::to_string(lineNumber) + " lines"};
    if (otherLines > 0)
        log.notes.push_back(path + ": " + std::to_string(otherLines) +
                            " lines that are not step lines (banners, the script's source, evaluation text) skipped");

    // A non-finite gradient norm beside a finite loss: the step an fp16 loss scaler skipped.
    addSkippedStepEvents(log);
    return log;
}

} // namespace nanscope
