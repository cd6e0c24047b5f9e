#pragma once

// The one judgement of text logs about skipped optimizer steps: a gradient norm that is NaN or Inf
// on a step whose loss is finite is what a loss scaler skips (fp16 overflow), so the step is a
// skipped_step event, not a blow-up. Shared by every reader of printed logs.

#include "core/importers/ScalarLog.h"

namespace nanscope {

void addSkippedStepEvents(ScalarLog& log);

} // namespace nanscope
