#pragma once

// What the logs that nanscope finds the structure of (text records, JSON lines, delimited tables)
// share: which logged name is the step counter, and how a counter that starts again at each epoch
// becomes one step axis. The readers know their syntax; this knows what their names mean.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace nanscope::records {

// Steps a log may state. Anything larger is damage, not a run (step arithmetic must not overflow).
constexpr int64_t kLargestStep = int64_t(1) << 50;

// How telling a logged name is as the record's step counter: 0 is the best, -1 is no step name.
// The name is matched case-blind on its last '/'-separated part ("trainer/global_step",
// "time/total_timesteps"). The order puts the optimizer's own count before counts of batches and
// of environment steps. `total_steps` is not here: LLaMA-Factory logs it as the planned total.
int stepKeyRank(std::string_view name);

// The epoch, logged as a count or with its fraction ("epoch": 0.37).
bool isEpochKey(std::string_view name);

// A step value as a record gives it: a non-negative integer (12, 12.0), nothing else.
inline bool asStep(double value, int64_t& step)
{
    if (!(value >= 0) || value > double(kLargestStep) || std::floor(value) != value)
        return false;
    step = int64_t(value);
    return true;
}

// One step axis from the counters records give, in file order. A counter that goes back while the
// epoch grows counts within the epoch (pix2pix's `iters`, a progress bar per epoch, mmdetection's
// `iter`): it continues after the previous epoch's last step. One that goes back with no new
// epoch is a resumed run, kept as logged.
class StepSequence
{
public:
    int64_t place(int64_t counter, double epoch = std::numeric_limits<double>::quiet_NaN())
    {
        const bool newEpoch = std::isfinite(epoch) && std::isfinite(m_lastEpoch) && epoch > m_lastEpoch;
        if (m_any && newEpoch && counter + m_offset <= m_last) {
            // Again from the start, or the same count (a progress bar's last frame, n/n) again.
            m_offset = m_last;
            ++m_epochRestarts;
        } else if (m_any && counter + m_offset < m_last) {
            ++m_goesBack;
        }
        m_any = true;
        m_last = counter + m_offset;
        if (std::isfinite(epoch))
            m_lastEpoch = epoch;
        return m_last;
    }
    uint64_t epochRestarts() const { return m_epochRestarts; }
    uint64_t goesBack() const { return m_goesBack; }

private:
    bool m_any = false;
    int64_t m_last = 0, m_offset = 0;
    double m_lastEpoch = std::numeric_limits<double>::quiet_NaN();
    uint64_t m_epochRestarts = 0, m_goesBack = 0;
};

// "1,234": counts in notes.
std::string countText(uint64_t count);

} // namespace nanscope::records
