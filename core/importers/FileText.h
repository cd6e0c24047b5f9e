#pragma once

// The whole of a small text file, for the readers of other tools' logs (they parse from memory).

#include "core/Result.h"

#include <cstdint>
#include <string>

namespace nanscope {

// Error names the file and says why (missing, a folder, unreadable, larger than maxBytes).
Result<std::string> readFileText(const std::string& path, uint64_t maxBytes);

} // namespace nanscope
