#include "core/source/Crc32c.h"

#include <array>

namespace nanscope {

namespace {

// Byte-at-a-time table for the reflected polynomial 0x82F63B78. Event files are read once, at
// well under the speed of this loop, so the slicing-by-8 or SSE4.2 variants would buy nothing.
constexpr std::array<uint32_t, 256> makeTable()
{
    std::array<uint32_t, 256> table {};
    for (uint32_t byte = 0; byte < 256; ++byte) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[byte] = crc;
    }
    return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

} // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc)
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    crc = ~crc;
    for (size_t i = 0; i < size; ++i)
        crc = kTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

} // namespace nanscope
