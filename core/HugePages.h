#pragma once

// Large buffers that are written once from start to end (a block of a run.h5 table, the text of a
// log file): asked to be backed by 2 MiB pages before their first write. In 4 KiB pages such a
// buffer costs one page fault per 4 KiB when first written (a 17 MB trainer_state.json: 4,200 of
// them, most of its first reading on a virtual machine); in 2 MiB pages a few dozen.

#include <cstddef>
#include <cstdint>

#include <sys/mman.h>

namespace nanscope {

// A hint: where transparent huge pages are off, or the range holds no whole 2 MiB page, nothing
// changes. Only the 2 MiB-aligned part of [data, data + bytes) is advised.
inline void adviseHugePages(void* data, size_t bytes)
{
    constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
    if (end > begin)
        madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

} // namespace nanscope
