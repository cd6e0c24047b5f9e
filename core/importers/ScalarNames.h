#pragma once

// The one table of names that training tools give the series the scan reads: `learning_rate`
// (Hugging Face) and `lr-AdamW` (Lightning's LearningRateMonitor) are both the run format's `lr`.

#include <string>

namespace nanscope {

// The run format's name for a logged series (loss, grad_norm, lr, eval_loss, loss_scale, epoch,
// skipped), or the logged name made safe as a dataset name ('/' and spaces become '.' and '_')
// when it is none of them.
std::string canonicalScalarName(const std::string& logged);

// `text` in lower case (ASCII): names are matched case-blind.
std::string lowered(std::string text);

// True for the names the run format defines, which the views and the scan read by name.
bool isKnownScalarName(const std::string& canonical);

} // namespace nanscope
