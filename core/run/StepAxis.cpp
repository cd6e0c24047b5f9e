#include "core/run/StepAxis.h"

#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace nanscope {

StepAxis::StepAxis(StepAxisKind kind, std::vector<double> steps, std::vector<double> values)
    : m_kind(kind)
    , m_steps(std::move(steps))
    , m_values(std::move(values))
{
}

std::optional<StepAxis> StepAxis::fromSeries(StepAxisKind kind, const std::vector<int64_t>& steps,
                                             const std::vector<double>& values, std::string* why)
{
    auto refuse = [&](std::string reason) -> std::optional<StepAxis> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    std::vector<double> keptSteps, keptValues;
    size_t finiteRows = 0, backwards = 0;
    const size_t n = std::min(steps.size(), values.size());
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(values[i]))
            continue;
        ++finiteRows;
        const auto step = double(steps[i]);
        if (!keptSteps.empty() && step <= keptSteps.back())
            continue; // a table's steps only grow; a source that repeats one is not an axis to trust
        double value = values[i];
        if (!keptValues.empty() && value < keptValues.back()) {
            ++backwards;
            value = keptValues.back();
        }
        keptSteps.push_back(step);
        keptValues.push_back(value);
    }
    if (keptSteps.size() < 2)
        return refuse("fewer than two finite rows");
    if (backwards * 10 > finiteRows)
        return refuse("it goes back on " + std::to_string(backwards) + " of " + std::to_string(finiteRows) +
                      " rows");
    if (!(keptValues.back() > keptValues.front()))
        return refuse("it never grows");
    return StepAxis(kind, std::move(keptSteps), std::move(keptValues));
}

double StepAxis::valueAt(double step) const
{
    if (!(step > m_steps.front()))
        return m_values.front();
    if (!(step < m_steps.back()))
        return m_values.back();
    const auto upper = std::upper_bound(m_steps.begin(), m_steps.end(), step);
    const auto i = size_t(upper - m_steps.begin());
    const double t = (step - m_steps[i - 1]) / (m_steps[i] - m_steps[i - 1]);
    return m_values[i - 1] + t * (m_values[i] - m_values[i - 1]);
}

double StepAxis::stepAt(double value) const
{
    if (!(value > m_values.front()))
        return m_steps.front();
    if (value > m_values.back())
        return m_steps.back();
    // The first row at or above the value; the value is reached between it and the row before.
    const auto atOrAbove = std::lower_bound(m_values.begin(), m_values.end(), value);
    const auto i = size_t(atOrAbove - m_values.begin());
    const double rise = m_values[i] - m_values[i - 1];
    const double t = rise > 0 ? (value - m_values[i - 1]) / rise : 1.0;
    return m_steps[i - 1] + t * (m_steps[i] - m_steps[i - 1]);
}

namespace {
// `value` with at most `decimals` decimals and no trailing zeros ("2.25", "1000.5", "3"), never
// in exponent form.
std::string trimmedDecimal(double value, int decimals)
{
    char digits[48];
    std::snprintf(digits, sizeof digits, "%.*f", decimals, value);
    std::string text = digits;
    if (text.find('.') == std::string::npos)
        return text;
    while (text.back() == '0')
        text.pop_back();
    if (text.back() == '.')
        text.pop_back();
    return text;
}
} // namespace

std::string StepAxis::format(double value) const
{
    if (m_kind == StepAxisKind::WallTime)
        return formatElapsed(value - m_values.front());
    // Whole epochs as "epoch 2", parts with up to two decimals ("epoch 2.25", "epoch 1000.5").
    return "epoch " + trimmedDecimal(value, 2);
}

std::string formatElapsed(double seconds)
{
    if (!std::isfinite(seconds))
        return "?";
    const bool negative = seconds < 0;
    // Under a minute, a part of a second is shown ("0.25s", "12.5s", to the millisecond): a run of a
    // few hundred milliseconds would otherwise read "0s" at every tick.
    const double magnitude = std::abs(seconds);
    if (magnitude < 59.9995 && std::abs(magnitude - std::round(magnitude)) >= 0.0005) {
        return (negative ? "-" : "") + trimmedDecimal(magnitude, 3) + "s";
    }
    auto total = static_cast<long long>(std::llround(std::abs(seconds)));
    const long long days = total / 86400, hours = total / 3600 % 24, minutes = total / 60 % 60, secs = total % 60;
    char text[48];
    if (days > 0)
        std::snprintf(text, sizeof text, "%lldd %02lldh", days, hours);
    else if (hours > 0)
        std::snprintf(text, sizeof text, "%lldh %02lldm", hours, minutes);
    else if (minutes > 0)
        std::snprintf(text, sizeof text, "%lldm %02llds", minutes, secs);
    else
        std::snprintf(text, sizeof text, "%llds", secs);
    return negative ? "-" + std::string(text) : std::string(text);
}

const char* stepAxisName(StepAxisKind kind)
{
    switch (kind) {
    case StepAxisKind::WallTime:
        return "wall time";
    case StepAxisKind::Epoch:
        return "epoch";
    case StepAxisKind::Step:
        break;
    }
    return "step";
}

const StepAxis* StepAxes::axis(StepAxisKind kind) const
{
    if (kind == StepAxisKind::WallTime && wallTime)
        return &*wallTime;
    if (kind == StepAxisKind::Epoch && epoch)
        return &*epoch;
    return nullptr;
}

StepAxes chooseStepAxes(const std::function<std::vector<LoggedSeriesRef>(const std::string& name)>& seriesNamed)
{
    StepAxes axes;
    for (auto [kind, name] : {std::pair{StepAxisKind::WallTime, runformat::kWallTime},
                              std::pair{StepAxisKind::Epoch, runformat::kEpoch}}) {
        for (const LoggedSeriesRef& series : seriesNamed(name)) {
            std::string why;
            auto axis = StepAxis::fromSeries(kind, series.steps, series.values, &why);
            if (!axis) {
                axes.notes.push_back("/" + series.table + "/" + name + " is not used as an x axis: " + why);
                continue;
            }
            (kind == StepAxisKind::WallTime ? axes.wallTime : axes.epoch) = std::move(axis);
            break;
        }
    }
    return axes;
}

Result<StepAxes> readStepAxes(const RunSource& source)
{
    std::vector<const TableInfo*> tables;
    for (const TableInfo& table : source.info().tables)
        if (table.name == runformat::kScalars)
            tables.insert(tables.begin(), &table);
        else if (runformat::isSeriesTableName(table.name) && table.names.empty())
            tables.push_back(&table);
    // Every candidate read first, so that the choice can hold references to them.
    std::map<std::string, std::vector<std::pair<std::string, std::vector<double>>>> read;
    for (const char* name : {runformat::kWallTime, runformat::kEpoch})
        for (const TableInfo* table : tables) {
            if (std::find(table->datasets.begin(), table->datasets.end(), name) == table->datasets.end())
                continue;
            auto values = source.readSeries(table->name, name);
            if (!values)
                return Error{values.error()};
            read[name].emplace_back(table->name, std::move(*values));
        }
    return chooseStepAxes([&](const std::string& name) {
        std::vector<LoggedSeriesRef> refs;
        for (const auto& [table, values] : read[name])
            refs.push_back({table, source.steps(table), values});
        return refs;
    });
}

} // namespace nanscope
