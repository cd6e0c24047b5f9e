#pragma once

// The optimizer-state facts `nanscope scan` hands to the scan (which reads no checkpoint itself):
// Adam epsilon domination per parameter, from the newest Hugging Face style checkpoint folder
// (checkpoint-N/optimizer.pt) of a run directory, or an optimizer.pt beside run.h5.

#include "core/scan/ScanInputs.h"

#include <string>
#include <vector>

namespace nanscope {

// Never fails: what could not be read is a note naming the file.
scan::ScanFacts optimizerScanFacts(const std::string& runDirectory, std::vector<std::string>& notes);

} // namespace nanscope
