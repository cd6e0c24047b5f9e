#include "core/source/StepTextLogReader.h"

#include "core/source/ScalarNames.h"

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

char lower(char c)
{
    return char(std::tolower(static_cast<unsigned char>(c)));
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

bool isLetter(char c)
{
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

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
        return std::nullopt;
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
    // Tokens of the rest, outside parentheses; `|` and `,` end a name, `:` and `=` bind one.
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
            continue;
        }
        ++stepLines;
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
    const std::vector<ScalarPoint>* loss = nullptr;
    const std::vector<ScalarPoint>* gradNorm = nullptr;
    for (const auto& [name, points] : log.series) {
        const std::string canonical = canonicalScalarName(name);
        if (canonical == "loss" && !loss)
            loss = &points;
        else if (canonical == "grad_norm" && !gradNorm)
            gradNorm = &points;
    }
    if (gradNorm) {
        std::map<int64_t, double> lossAt;
        if (loss)
            for (const auto& p : *loss)
                lossAt[p.step] = p.value;
        for (const auto& p : *gradNorm) {
            if (std::isfinite(p.value))
                continue;
            auto it = lossAt.find(p.step);
            if (it != lossAt.end() && std::isfinite(it->second))
                log.events.push_back({p.step, "skipped_step",
                                      "the gradient norm is " + std::string(std::isnan(p.value) ? "NaN" : "Inf") +
                                          " while the loss is finite: a loss scaler skips such a step (fp16 overflow)"});
        }
    }
    return log;
}

} // namespace nanscope
