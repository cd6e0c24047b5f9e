#include "core/importers/TextRecords.h"

#include "core/importers/DecimalText.h"
#include "core/importers/RecordSteps.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

namespace nanscope::textrecord {

namespace {

using ascii::equalsIgnoringCase;
using ascii::isDigit;
using ascii::isLetter;
using ascii::lower;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Characters that end a token. ':' and '=' also bind a name to its value.
constexpr bool separatorChar(unsigned char c)
{
    switch (c) {
    case ' ': case '\t': case '\r': case '\n': case ',': case ';': case '|': case '{': case '}':
    case '[': case ']': case '(': case ')': case '<': case '>': case ':': case '=':
        return true;
    default:
        return false;
    }
}

// What each byte is to the tokenizer, in one look-up (it asks for every byte of a log): part of a
// token, a separator, or a control character (ESC starts a terminal sequence; the others are binary).
enum ByteClass : unsigned char { kTokenByte = 0, kSeparatorByte = 1, kControlByte = 2 };

struct ByteClasses
{
    unsigned char table[256] = {};
    constexpr ByteClasses()
    {
        for (int c = 0; c < 256; ++c) {
            const auto byte = static_cast<unsigned char>(c);
            table[c] = separatorChar(byte)                          ? kSeparatorByte
                       : (byte < 0x20 && byte != '\t') || byte == 0x7f ? kControlByte
                                                                     : kTokenByte;
        }
    }
};
constexpr ByteClasses kByteClasses;

inline unsigned char byteClass(char c)
{
    return kByteClasses.table[static_cast<unsigned char>(c)];
}

inline bool isSeparator(char c)
{
    return byteClass(c) == kSeparatorByte;
}

bool allDigits(std::string_view text)
{
    for (char c : text)
        if (!isDigit(c))
            return false;
    return !text.empty();
}

std::string_view unquoted(std::string_view token)
{
    if (token.size() >= 2 && (token.front() == '\'' || token.front() == '"') && token.back() == token.front())
        return token.substr(1, token.size() - 2);
    if (!token.empty() && (token.front() == '\'' || token.front() == '"'))
        token.remove_prefix(1);
    if (!token.empty() && (token.back() == '\'' || token.back() == '"'))
        token.remove_suffix(1);
    return token;
}

enum class Kind { Word, Number, Absent, Counter, Other };

struct Token
{
    Kind kind = Kind::Other;
    double value = 0;
    int64_t count = 0, total = 0; // Kind::Counter
};

// NaN and Inf as people and libraries print them: nan, NaN, -nan, inf, -inf, Infinity, +Inf.
bool nonFinite(std::string_view t, double& value)
{
    bool negative = false;
    if (!t.empty() && (t.front() == '-' || t.front() == '+')) {
        negative = t.front() == '-';
        t.remove_prefix(1);
    }
    if (equalsIgnoringCase(t, "nan"))
        value = kNaN;
    else if (equalsIgnoringCase(t, "inf") || equalsIgnoringCase(t, "infinity"))
        value = negative ? -kInf : kInf;
    else
        return false;
    return true;
}

Token classify(std::string_view raw)
{
    Token token;
    const std::string_view t = (raw.front() == '\'' || raw.front() == '"' || raw.back() == '\'' || raw.back() == '"')
                                   ? unquoted(raw)
                                   : raw;
    if (t.empty())
        return token;
    const char first = t.front();
    if (isLetter(first) || first == '_' || ((first == '-' || first == '+') && t.size() > 1 && isLetter(t[1]))) {
        const char head = lower(first == '-' || first == '+' ? t[1] : first);
        if ((head == 'n' || head == 'i') && nonFinite(t, token.value)) {
            token.kind = Kind::Number;
        } else if ((first == 'N' || first == 'n') && (t == "None" || t == "null" || t == "NULL" || t == "nil")) {
            token.kind = Kind::Absent;
        } else if (first == '-' || first == '+') {
            token.kind = Kind::Other;
        } else {
            // "nanms", "infs": a placeholder printed before there is a value.
            token.kind = (head == 'n' && t.size() > 3 && equalsIgnoringCase(t.substr(0, 3), "nan")) ? Kind::Other
                                                                                                 : Kind::Word;
        }
        return token;
    }
    const char* begin = t.data() + (first == '+' ? 1 : 0);
    const char* end = t.data() + t.size();
    if (begin == end || !(isDigit(*begin) || *begin == '-' || *begin == '.'))
        return token;
    // "450/1000": a count of a total.
    if (isDigit(*begin)) {
        const char* digitsEnd = begin;
        while (digitsEnd < end && isDigit(*digitsEnd))
            ++digitsEnd;
        if (digitsEnd < end && *digitsEnd == '/') {
            // Digits only on both sides, at most 15 each (no overflow), read here.
            auto integer = [](const char* from, const char* to, int64_t& value) {
                if (from == to || to - from > 15)
                    return false;
                value = 0;
                for (const char* c = from; c < to; ++c) {
                    if (!isDigit(*c))
                        return false;
                    value = value * 10 + (*c - '0');
                }
                return true;
            };
            int64_t count = 0, total = 0;
            if (integer(begin, digitsEnd, count) && integer(digitsEnd + 1, end, total) &&
                count <= records::kLargestStep) {
                token.kind = Kind::Counter;
                token.count = count;
                token.total = total;
            }
            return token;
        }
    }
    double value = 0;
    const char* next = fastDecimal(begin, end, value);
    if (!next) {
        const auto parsed = std::from_chars(begin, end, value);
        if (parsed.ec != std::errc())
            return token;
        next = parsed.ptr;
    }
    const size_t unit = size_t(end - next);
    if (unit == 0 || (unit == 1 && (*next == 's' || *next == '%')) || (unit == 2 && next[0] == 'm' && next[1] == 's') ||
        (unit == 3 && next[0] == 's' && next[1] == 'e' && next[2] == 'c')) {
        token.kind = Kind::Number;
        token.value = value;
    }
    return token;
}

// Past an escape sequence at `at` (ESC, then '[' and parameters up to a final byte, or one byte).
size_t skipEscape(std::string_view s, size_t at)
{
    ++at;
    if (at < s.size() && s[at] == '[') {
        ++at;
        while (at < s.size() && !(s[at] >= 0x40 && s[at] <= 0x7E))
            ++at;
        return std::min(at + 1, s.size());
    }
    return std::min(at + 1, s.size());
}

// The wrappers numbers are printed in: np.float64(0.1), torch.tensor(0.5), tensor(0.5,
// device='cuda:0'), Decimal('0.1'), float(1); not any call (GOTO(NaN) is an action, not a value).
bool isNumberWrapper(std::string_view word)
{
    const size_t dot = word.rfind('.');
    const std::string_view last = dot == std::string_view::npos ? word : word.substr(dot + 1);
    using namespace std::string_view_literals;
    static constexpr std::string_view kWrappers[] = {"float64"sv, "float32"sv, "float16"sv, "bfloat16"sv, "float"sv,
                                                     "double"sv,  "int64"sv,   "int32"sv,   "int"sv,      "tensor"sv,
                                                     "array"sv,   "decimal"sv, "scalar"sv,  "longdouble"sv};
    for (std::string_view wrapper : kWrappers)
        if (equalsIgnoringCase(last, wrapper))
            return true;
    return false;
}

// classify, with the two commonest tokens of a log decided first: a plain word (not nan, inf,
// None or null) and a plain number.
Token quickClassify(std::string_view raw)
{
    Token token;
    const char first = raw.front();
    // " - " between the pairs of a verl line, a lone "#" of a progress bar: no value, no name.
    if (raw.size() == 1 && !isLetter(first) && !isDigit(first) && first != '_')
        return token;
    if ((isLetter(first) || first == '_') && first != 'n' && first != 'N' && first != 'i' && first != 'I') {
        const char last = raw.back();
        if (last != '\'' && last != '"') {
            token.kind = Kind::Word;
            return token;
        }
    } else if (isDigit(first) || (first == '-' && raw.size() > 1 && isDigit(raw[1]))) {
        const char* end = raw.data() + raw.size();
        const char* next = fastDecimal(raw.data(), end, token.value);
        if (next == end) {
            token.kind = Kind::Number;
            return token;
        }
        if (next && *next != '/') {
            // A number and a unit ("312ms", "45%", "4.50it/s"), read once.
            const size_t unit = size_t(end - next);
            token.kind = (unit == 1 && (*next == 's' || *next == '%')) || (unit == 2 && next[0] == 'm' && next[1] == 's') ||
                                 (unit == 3 && next[0] == 's' && next[1] == 'e' && next[2] == 'c')
                             ? Kind::Number
                             : Kind::Other;
            return token;
        }
    }
    return classify(raw);
}

class SegmentParser
{
public:
    SegmentParser(std::string_view text, Segment& out)
        : m_text(text)
        , m_out(out)
    {
    }

    void run()
    {
        m_out.indented = !m_text.empty() && (m_text.front() == ' ' || m_text.front() == '\t');
        if (!progressBar())
            scan(0, m_text.size());
    }

private:
    // A tqdm progress bar ("Epoch 3:  45%|####5     | 450/1000 [00:10<00:12, 4.50it/s, loss=1.2]"):
    // its count and total read straight away, and only what can hold pairs tokenized (the text
    // before the percentage, the postfix after the rate, anything after the bracket). A log of
    // progress-bar redraws is mostly those bars. False when the piece is no such bar.
    bool progressBar()
    {
        const std::string_view s = m_text;
        const size_t percent = s.find("%|");
        if (percent == std::string_view::npos)
            return false;
        const size_t barEnd = s.find('|', percent + 2);
        if (barEnd == std::string_view::npos)
            return false;
        size_t at = barEnd + 1;
        while (at < s.size() && s[at] == ' ')
            ++at;
        auto integer = [&](int64_t& value) {
            const size_t start = at;
            value = 0;
            while (at < s.size() && isDigit(s[at]) && at - start < 15)
                value = value * 10 + (s[at++] - '0');
            return at > start && !(at < s.size() && isDigit(s[at]));
        };
        int64_t count = 0, total = 0;
        if (!integer(count) || at >= s.size() || s[at] != '/')
            return false;
        ++at;
        if (!integer(total))
            return false;
        while (at < s.size() && s[at] == ' ')
            ++at;
        if (at >= s.size() || s[at] != '[' || count > records::kLargestStep)
            return false;
        const size_t open = at;
        const size_t close = s.find(']', open);
        if (close == std::string_view::npos)
            return false;
        size_t numberStart = percent;
        while (numberStart > 0 && (isDigit(s[numberStart - 1]) || s[numberStart - 1] == '.'))
            --numberStart;
        m_out.barCount = count;
        m_out.barTotal = total;
        scan(0, numberStart);
        // [elapsed<remaining, rate, postfix...]: the postfix follows the second comma.
        size_t comma = s.find(',', open);
        if (comma != std::string_view::npos && comma < close)
            comma = s.find(',', comma + 1);
        if (comma != std::string_view::npos && comma < close)
            scan(comma + 1, close);
        scan(close + 1, s.size());
        return true;
    }

    // Tokenizes the text from `from` to `to` (pairs do not cross it).
    void scan(size_t from, size_t to)
    {
        if (m_out.binary)
            return;
        clearName();
        m_afterBinder = false;
        m_bracketAfterName = false;
        const std::string_view s = m_text.substr(0, to);
        size_t i = from;
        while (i < s.size()) {
            const char c = s[i];
            const unsigned char kind = byteClass(c);
            if (kind == kSeparatorByte) {
                separator(c);
                ++i;
                continue;
            }
            if (kind == kControlByte) {
                if (c != '\x1b') {
                    m_out.binary = true;
                    return;
                }
                // A terminal's colour or cursor sequence (ESC [ ... final byte): not text.
                i = skipEscape(s, i);
                separator(',');
                continue;
            }
            size_t end = i;
            // A token runs to the next separator; quotes may hold one (`'cuda:0'` stays one token).
            if (c == '\'' || c == '"') {
                size_t close = i + 1;
                const size_t last = std::min(s.size(), i + 256);
                while (close < last && s[close] != c && s[close] != '\n' && s[close] != '\r')
                    ++close;
                if (close < last && s[close] == c)
                    end = close + 1;
            }
            // Four bytes a step while all four are token bytes (kTokenByte is 0), then one by one.
            const char* data = s.data();
            const size_t size = s.size();
            while (end + 4 <= size && (byteClass(data[end]) | byteClass(data[end + 1]) | byteClass(data[end + 2]) |
                                       byteClass(data[end + 3])) == 0)
                end += 4;
            while (end < size && byteClass(data[end]) == kTokenByte)
                ++end;
            // "2,430" and "1,234,567": thousands separators inside one number.
            if (isDigit(c) && end + 3 < s.size() + 0 && s[end] == ',' && allDigits(s.substr(i, end - i)) &&
                end - i <= 3) {
                size_t j = end;
                while (j + 3 < s.size() && s[j] == ',' && isDigit(s[j + 1]) && isDigit(s[j + 2]) && isDigit(s[j + 3]) &&
                       (j + 4 >= s.size() || !isDigit(s[j + 4])))
                    j += 4;
                if (j > end) {
                    double value = 0;
                    for (size_t k = i; k < j; ++k)
                        if (s[k] != ',')
                            value = value * 10 + (s[k] - '0');
                    token(std::string_view(), j, value);
                    i = j;
                    continue;
                }
            }
            const std::string_view raw(s.data() + i, end - i);
            // A wrapper around a number: np.float64(0.1), tensor(0.1, device='cuda:0'), float(1).
            if (end < s.size() && s[end] == '(' && isNumberWrapper(raw)) {
                size_t after = 0;
                if (wrapped(end, after)) {
                    i = after;
                    continue;
                }
            }
            token(raw, end);
            i = end;
            if (m_full)
                return;
            // "name:value", "name=value", "name: value": the number read right here, when it is a
            // plain one that ends where its token does (the commonest pair of a log).
            if (m_words > 0 && end + 1 < size && (data[end] == ':' || data[end] == '=')) {
                size_t at = end + 1;
                if (at < size && data[at] == ' ')
                    ++at;
                if (at < size && (isDigit(data[at]) || (data[at] == '-' && at + 1 < size && isDigit(data[at + 1])))) {
                    double value = 0;
                    const char* next = fastDecimal(data + at, data + size, value);
                    const size_t after = next ? size_t(next - data) : 0;
                    if (next && (after == size || byteClass(data[after]) == kSeparatorByte) &&
                        !(after < size && data[after] == ',' && after + 1 < size && isDigit(data[after + 1]))) {
                        separator(data[end]);
                        emit(value, false);
                        i = after;
                        if (m_full)
                            return;
                    }
                }
            }
        }
    }

    struct Span
    {
        size_t begin = 0, end = 0;
    };

    void clearName() { m_words = 0; }

    std::string_view name() const
    {
        std::string_view n = m_text.substr(m_word[0].begin, m_word[m_words - 1].end - m_word[0].begin);
        return unquoted(n);
    }

    void emit(double value, bool absent)
    {
        if (m_words > 0) {
            m_out.pairs.push_back(Pair{name(), value, absent});
            m_full = m_out.pairs.size() >= kMostPairs;
        }
        clearName();
        m_afterBinder = false;
    }

    void separator(char c)
    {
        // "Epoch [001/300]", "Step [100/600]": a count in brackets right after its name.
        if (c == '[' && m_words > 0 && !m_afterBinder) {
            m_bracketAfterName = true;
            return;
        }
        // '|' binds in a table row ("|    ep_len_mean | 203 |") and ends a name elsewhere: a word
        // after it starts a new name, as after ':'.
        if (c == ':' || c == '=' || c == '|') {
            m_afterBinder = m_words > 0;
            return;
        }
        if (c == ' ' || c == '\t')
            return;
        clearName();
        m_afterBinder = false;
    }

    // At `open`, the '(' after a word: the number inside becomes the value when it is the first
    // thing there; `after` is past the closing ')'. False when it holds no leading number.
    bool wrapped(size_t open, size_t& after)
    {
        size_t i = open + 1;
        while (i < m_text.size() && m_text[i] == ' ')
            ++i;
        size_t end = i;
        while (end < m_text.size() && !isSeparator(m_text[end]))
            ++end;
        const Token inner = classify(m_text.substr(i, end - i));
        if (inner.kind != Kind::Number || m_words == 0)
            return false;
        int depth = 1;
        size_t j = end;
        for (; j < m_text.size() && depth > 0 && j - open < 4096; ++j) {
            if (m_text[j] == '(')
                ++depth;
            else if (m_text[j] == ')')
                --depth;
        }
        if (depth != 0)
            return false;
        emit(inner.value, false);
        after = j;
        return true;
    }

    // `raw` empty: a number already read (`number`).
    void token(std::string_view raw, size_t end, double number = 0)
    {
        const bool bracketed = m_bracketAfterName;
        m_bracketAfterName = false;
        Token t;
        if (raw.empty()) {
            t.kind = Kind::Number;
            t.value = number;
        } else {
            t = quickClassify(raw);
        }
        if (bracketed && t.kind != Kind::Counter) {
            clearName(); // "[INFO]", "loss [mean]": a bracket after a word holds no count of it
            m_afterBinder = false;
        }
        switch (t.kind) {
        case Kind::Word:
            if (m_afterBinder)
                clearName(); // "INFO:root:step 12": a word after a binder starts a new name
            m_afterBinder = false;
            if (m_words == 3) {
                m_word[0] = m_word[1];
                m_word[1] = m_word[2];
                m_words = 2;
            }
            m_word[m_words++] = Span{size_t(raw.data() - m_text.data()), end};
            break;
        case Kind::Number:
            // "Loading checkpoint shards: 100%|█████|": a progress bar's percentage.
            if (!raw.empty() && raw.back() == '%' && end < m_text.size() && m_text[end] == '|') {
                clearName();
                m_afterBinder = false;
                break;
            }
            emit(t.value, false);
            break;
        case Kind::Absent:
            emit(0, true);
            break;
        case Kind::Counter: {
            if (m_words > 0 && (records::stepKeyRank(name()) >= 0 || records::isEpochKey(name()))) {
                emit(double(t.count), false); // "step 61/74", "[batch=12/100]", Keras' "Epoch 3/10"
                break;
            }
            size_t next = end;
            while (next < m_text.size() && m_text[next] == ' ')
                ++next;
            if (next < m_text.size() && m_text[next] == '[' && m_out.barCount < 0) {
                m_out.barCount = t.count;
                m_out.barTotal = t.total;
            }
            clearName();
            m_afterBinder = false;
            break;
        }
        case Kind::Other:
            clearName();
            m_afterBinder = false;
            break;
        }
    }

    std::string_view m_text;
    Segment& m_out;
    Span m_word[3];
    size_t m_words = 0;
    bool m_afterBinder = false;
    bool m_bracketAfterName = false;
    bool m_full = false; // kMostPairs read: the rest of the piece is not
};

} // namespace

void parseSegment(std::string_view text, Segment& out)
{
    out.pairs.clear();
    out.indented = false;
    out.barCount = out.barTotal = -1;
    out.binary = false;
    SegmentParser(text, out).run();
}

} // namespace nanscope::textrecord
