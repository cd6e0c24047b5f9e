// libFuzzer harness: ZipArchive::open on any bytes, then every entry read (bounded copies, CRC-32).

#include "FuzzSupport.h"
#include "core/checkpoint/ZipArchive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string path = nanscope::fuzz::writeInput("archive.pt", data, size);
    auto zip = nanscope::ZipArchive::open(path);
    if (!zip)
        return 0;
    size_t read = 0;
    for (const auto& entry : zip->entries()) {
        if (++read > 64)
            break;
        auto bytes = zip->read(entry);
        if (bytes && bytes->size() != entry.size)
            __builtin_trap(); // a read that succeeds returns exactly the entry's recorded size
        zip->find(entry.name);
    }
    return 0;
}
