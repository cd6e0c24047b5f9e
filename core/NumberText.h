#pragma once

// A number as people read it in a message, a table, a plot readout or a report: one spelling
// in the scan's texts, triage, comparisons, checkpoint and optimizer flags, the stats and triage
// tables, the report's replay lines, the replay ops table and the plot readout
// (docs/architecture.md, "One judgement, one place"). `significantDigits` as printf's %g, but
// independent of the process locale (a Qt program runs under the user's LC_NUMERIC, where
// printf would write "1,5"); NaN, +Inf and -Inf spelt as the scan's JSON and the views spell them.
// Machine formats keep their own spellings: CSV cells ("nan", "inf") and JSON round trips.

#include <charconv>
#include <cmath>
#include <string>

namespace nanscope {

inline std::string numberText(double value, int significantDigits = 3)
{
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    char text[64];
    const auto written = std::to_chars(text, text + sizeof text, value, std::chars_format::general,
                                       significantDigits < 1 ? 1 : significantDigits);
    return std::string(text, written.ptr);
}

} // namespace nanscope
