#pragma once

// Opens a multi-rank run (docs/run-format.md, "Multi-rank runs"): the manifest ranks.json names
// the ranks and their folders; each rank folder is a run directory with its own rank.json state.
// Without a manifest (rank 0 died before writing it) the rank_NNNNN/ folders are the ranks.

#include "core/Result.h"
#include "core/run/RankSet.h"

#include <memory>
#include <string>

namespace nanscope {

// `path` is a folder holding ranks.json or rank_NNNNN/ folders with run.h5, or ranks.json itself.
bool isMultiRankRun(const std::string& path);

// Opens every rank's run. A rank that cannot be read is kept as a member with its reason; an
// error only when the manifest is unreadable or no rank can be read.
Result<std::unique_ptr<RankSet>> openMultiRankRun(const std::string& path);

} // namespace nanscope
