#include "core/replay/ReplayOptions.h"

#include <limits>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace nanscope {

std::string libtorchVersion()
{
    // core/CMakeLists.txt passes the version of the LibTorch that nanscope_torch links.
    return NANSCOPE_LIBTORCH_VERSION;
}

// Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap, and the heap's top is
// never trimmed: a replay's peak is held until the process ends, seconds later.
constexpr int kHeapBlocksUpTo = 32 << 20;
constexpr int kNeverTrim = std::numeric_limits<int>::max();

void keepFreedMemoryForReuse()
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, kHeapBlocksUpTo);
    mallopt(M_TRIM_THRESHOLD, kNeverTrim);
#endif
}

std::vector<std::pair<std::string, std::string>> keepFreedMemoryEnvironment()
{
    return {{"MALLOC_MMAP_THRESHOLD_", std::to_string(kHeapBlocksUpTo)},
            {"MALLOC_TRIM_THRESHOLD_", std::to_string(kNeverTrim)}};
}

} // namespace nanscope
