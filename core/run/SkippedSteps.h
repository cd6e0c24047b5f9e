#pragma once

// Which steps the training skipped (an update it threw away: a loss scaler's overflow, a guard's
// non-finite step), read the one way by the scan, the window and triage: /scalars/skipped where it
// was logged, a row being skipped above 0.5 (the recorders write 0 or 1; a mean over logged steps
// reads as skipped when most were), else the /events of kind skipped_step (DeepSpeed's overflow
// lines). The scan marks the logged rows among those steps, since its rules judge rows; the
// overview marks every one.

#include "core/run/RunFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::runformat {

inline bool isSkippedValue(double skipped)
{
    return skipped > 0.5;
}

inline bool isSkippedEvent(const std::string& kind)
{
    return kind == event::kSkippedStep;
}

// The steps of the skipped_step events among `kinds` (at `steps`, the /events table's steps).
inline std::vector<int64_t> skippedStepsOfEvents(const std::vector<std::string>& kinds,
                                                 const std::vector<int64_t>& steps)
{
    std::vector<int64_t> skipped;
    for (size_t i = 0; i < kinds.size() && i < steps.size(); ++i)
        if (isSkippedEvent(kinds[i]))
            skipped.push_back(steps[i]);
    return skipped;
}

} // namespace nanscope::runformat
