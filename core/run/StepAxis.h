#pragma once

#include "core/Result.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

class RunSource;

// What the x axis of a step plot counts.
enum class StepAxisKind { Step, WallTime, Epoch };

// A quantity logged against the steps that never goes back (the wall time, the epoch), used as
// another x axis for step plots, as TensorBoard and W&B offer. It maps a step to its value and a
// value back to a step by linear interpolation between the logged rows.
//
// The plots stay on steps, so zoom, incidents, replay clicks and compared runs keep one meaning;
// the axis is labelled in the quantity instead. A pause in training therefore shows as time ticks
// that crowd together, not as a gap.
class StepAxis
{
public:
    // The axis of a logged series, or nullopt with `why` set when it cannot serve as one: fewer
    // than two finite rows, no growth at all, or a series that goes back on more than a tenth of
    // its rows (a clock that was reset, logs of several runs mixed). A row that goes back a
    // little (clock adjustments) is held at the value before it.
    static std::optional<StepAxis> fromSeries(StepAxisKind kind, const std::vector<int64_t>& steps,
                                              const std::vector<double>& values, std::string* why = nullptr);

    StepAxisKind kind() const { return m_kind; }
    // Before the first logged row, the first value; after the last, the last.
    double valueAt(double step) const;
    // The first step at which the value is reached (the first or last logged step outside the range).
    double stepAt(double value) const;
    double firstStep() const { return m_steps.front(); }
    double lastStep() const { return m_steps.back(); }
    double firstValue() const { return m_values.front(); }
    double lastValue() const { return m_values.back(); }

    // How the value at `step` reads on an axis tick and in a readout: the time since the first
    // logged row ("1h 05m", "12m 30s", "2d 03h") or the epoch ("epoch 2", "epoch 2.35", at most
    // two decimals).
    std::string label(double step) const { return format(valueAt(step)); }
    // The same for a value of the quantity (seconds since the Unix epoch, an epoch).
    std::string format(double value) const;

private:
    StepAxis(StepAxisKind kind, std::vector<double> steps, std::vector<double> values);

    StepAxisKind m_kind;
    std::vector<double> m_steps;  // strictly increasing
    std::vector<double> m_values; // never decreasing
};

// A duration as an axis reads it: "0.25s", "45s", "12m 30s", "1h 05m", "2d 03h" (parts of a
// second only under a minute, to the millisecond).
std::string formatElapsed(double seconds);

// Step, wall time, epoch: the names a user picks from ("step", "wall time", "epoch").
const char* stepAxisName(StepAxisKind kind);

// The alternative axes a run logs: `wall_time` and `epoch` (runformat::kWallTime, kEpoch), read
// from /scalars first, then from any other series table. `notes` says why a logged series could
// not be used.
struct StepAxes
{
    std::optional<StepAxis> wallTime;
    std::optional<StepAxis> epoch;
    std::vector<std::string> notes;

    const StepAxis* axis(StepAxisKind kind) const;
};

// One table's series of a name, as a candidate axis.
struct LoggedSeriesRef
{
    std::string table;
    const std::vector<int64_t>& steps;
    const std::vector<double>& values;
};

// The one choice of axes, from series already read: `seriesNamed(name)` gives every table's
// series of that name, /scalars first (the training-step table, the finest-grained one); the
// first that can serve wins.
StepAxes chooseStepAxes(const std::function<std::vector<LoggedSeriesRef>(const std::string& name)>& seriesNamed);

// The same choice, reading the series from a run.
Result<StepAxes> readStepAxes(const RunSource& source);

} // namespace nanscope
