#pragma once

// One line per figure, in the form bench/run_all.sh gathers from every benchmark into one table:
//
//   TABLE<TAB>bench<TAB>figure<TAB>measured<TAB>baseline<TAB>target<TAB>met|missed|-
//
// Each benchmark still prints its own readable lines; these follow them. "-" in the last column:
// a figure with no target (printed for context, e.g. the baseline's own time).

#include <cstdio>
#include <optional>
#include <string>

#include <unistd.h>

namespace nanscope::bench {

// Called after a benchmark writes its files and before it times anything: the kernel's writeback
// of hundreds of MiB of dirty pages otherwise runs beside what is timed, on a 2-core machine one
// of the two cores (a window open that reads 0.3 s read 1.5 s once, right after its run was written).
inline void flushWrittenFiles()
{
    ::sync();
}

inline void tableRow(const char* bench, const std::string& figure, const std::string& measured,
                     const std::string& baseline, const std::string& target, std::optional<bool> met)
{
    std::printf("TABLE\t%s\t%s\t%s\t%s\t%s\t%s\n", bench, figure.c_str(), measured.c_str(),
                baseline.empty() ? "-" : baseline.c_str(), target.empty() ? "-" : target.c_str(),
                met ? (*met ? "met" : "missed") : "-");
    std::fflush(stdout);
}

// "12.3 ms", "1.24 s", "2.07x", "71%": the units the table uses.
inline std::string formatted(const char* format, double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, value);
    return buffer;
}
inline std::string milliseconds(double ms)
{
    return ms >= 1000 ? formatted("%.2f s", ms / 1000) : formatted(ms >= 10 ? "%.1f ms" : "%.2f ms", ms);
}
inline std::string seconds(double s)
{
    return milliseconds(s * 1000);
}
inline std::string times(double ratio)
{
    return formatted("%.2fx", ratio);
}
inline std::string percent(double share)
{
    return formatted("%.0f%%", 100 * share);
}

} // namespace nanscope::bench
