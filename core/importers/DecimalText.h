#pragma once

// Decimal numbers as logs print them, read correctly rounded and fast: the text-log, table and
// JSON readers read every number of a log through readNumber, so it is inline where they call it.

#include "core/importers/AsciiText.h"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace nanscope::textrecord {

// Eight ASCII digits at `p` as their value, when all eight are digits (two's-complement tricks on
// one little-endian word: a byte-wise check, then pairs, quads and octets combined by multiplies).
inline bool eightDigits(const char* p, uint64_t& value)
{
    uint64_t word = 0;
    std::memcpy(&word, p, 8);
    if (((word & 0xF0F0F0F0F0F0F0F0ull) | (((word + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) !=
        0x3333333333333333ull)
        return false;
    word = (word & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
    word = (word & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
    value = (word & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32;
    return true;
}

// Digits from `p` into `digits`, eight at a time where they come in eights.
inline const char* readDigits(const char* p, const char* end, uint64_t& digits)
{
    uint64_t eight = 0;
    while (end - p >= 8 && digits < 100000000000ull && eightDigits(p, eight)) {
        digits = digits * 100000000ull + eight;
        p += 8;
    }
    while (p < end && ascii::isDigit(*p))
        digits = digits * 10 + uint64_t(*p++ - '0');
    return p;
}

// A decimal with at most 15 significant digits and a small exponent ("0.6914", "2e-05", "-3.25"),
// read exactly: its digits are an integer below 2^53 and the power of ten is exact in a double, so
// one multiplication or division rounds correctly (Clinger's fast path), as from_chars would.
// Null for anything else, which from_chars then reads.
inline const char* fastDecimal(const char* p, const char* end, double& value)
{
    static constexpr double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const bool negative = p < end && *p == '-';
    if (negative)
        ++p;
    // Leading zeros are no significant digits (0.000123 has three); the digits are counted by
    // where they start and end, not one by one.
    uint64_t digits = 0;
    int exponent = 0;
    const char* start = p;
    while (p < end && *p == '0')
        ++p;
    const char* integerDigits = p;
    p = readDigits(p, end, digits);
    int significant = int(p - integerDigits);
    const bool integerPart = p > start;
    if (p < end && *p == '.') {
        ++p;
        const char* fraction = p;
        if (significant == 0)
            while (p < end && *p == '0') {
                ++p;
                --exponent;
            }
        const char* fractionDigits = p;
        p = readDigits(p, end, digits);
        significant += int(p - fractionDigits);
        exponent -= int(p - fractionDigits);
        if (!integerPart && p == fraction)
            return nullptr;
    } else if (!integerPart) {
        return nullptr;
    }
    if (significant > 15)
        return nullptr;
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char* mark = p++;
        bool negativeExponent = false;
        if (p < end && (*p == '+' || *p == '-'))
            negativeExponent = *p++ == '-';
        int e = 0;
        const char* exponentStart = p;
        while (p < end && ascii::isDigit(*p) && e < 1000)
            e = e * 10 + (*p++ - '0');
        if (p == exponentStart) {
            p = mark; // "3e" is 3 and a unit, as from_chars reads it
        } else {
            exponent += negativeExponent ? -e : e;
        }
    }
    if (exponent < -22 || exponent > 22)
        return nullptr;
    double result = double(digits);
    result = exponent < 0 ? result / kPowers[-exponent] : result * kPowers[exponent];
    value = negative ? -result : result;
    return p;
}

// A number from `begin` ("0.6914", "-2e-05", "1234"), correctly rounded: up to 15 significant
// digits without from_chars, the rest through it. Where it ends, or null when no number starts there.
inline const char* readNumber(const char* begin, const char* end, double& value)
{
    if (const char* next = fastDecimal(begin, end, value))
        return next;
    const auto parsed = std::from_chars(begin, end, value);
    return parsed.ec == std::errc() ? parsed.ptr : nullptr;
}

} // namespace nanscope::textrecord
