#include "core/importers/Crc32c.h"

#include "core/CpuFeatures.h"

#include <array>
#include <cstring>

#include <nmmintrin.h>

namespace nanscope {

namespace {

// Slicing-by-8 tables for the reflected polynomial 0x82F63B78: kTables[0] is the byte-at-a-time
// table, kTables[k][b] the CRC of byte b followed by k zero bytes. Opening a 100,000-step event
// file checks 16 MB of records; the byte-at-a-time loop alone took half as long as decoding them
// (bench_sources), slicing-by-8 about a quarter of that, with no CPU-specific code.
using Crc32cTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Crc32cTables makeTables()
{
    Crc32cTables tables {};
    for (uint32_t byte = 0; byte < 256; ++byte) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        tables[0][byte] = crc;
    }
    for (uint32_t byte = 0; byte < 256; ++byte)
        for (size_t k = 1; k < 8; ++k)
            tables[k][byte] = (tables[k - 1][byte] >> 8) ^ tables[0][tables[k - 1][byte] & 0xFFu];
    return tables;
}

constexpr Crc32cTables kTables = makeTables();

uint32_t loadLittleEndian32(const unsigned char* bytes)
{
    return uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
}

// The crc32 instruction computes the same reflected CRC-32C step as the tables, eight bytes per
// instruction: a 100,000-step event file's 16 MB in a few milliseconds.
__attribute__((target("sse4.2"))) uint32_t crc32cInstruction(const unsigned char* bytes, size_t size, uint32_t crc)
{
    uint64_t state = ~crc;
    for (; size >= 8; bytes += 8, size -= 8) {
        uint64_t word;
        std::memcpy(&word, bytes, sizeof word);
        state = _mm_crc32_u64(state, word);
    }
    auto state32 = uint32_t(state);
    for (; size > 0; ++bytes, --size)
        state32 = _mm_crc32_u8(state32, *bytes);
    return ~state32;
}

} // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc)
{
    if (cpu::hasSse42())
        return crc32cInstruction(static_cast<const unsigned char*>(data), size, crc);
    return crc32cPortable(data, size, crc);
}

uint32_t crc32cPortable(const void* data, size_t size, uint32_t crc)
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    crc = ~crc;
    // Eight bytes per step: the CRC folded into the first four, each byte looked up in the table
    // that accounts for the bytes after it.
    for (; size >= 8; bytes += 8, size -= 8) {
        const uint32_t low = loadLittleEndian32(bytes) ^ crc;
        const uint32_t high = loadLittleEndian32(bytes + 4);
        crc = kTables[7][low & 0xFFu] ^ kTables[6][(low >> 8) & 0xFFu] ^ kTables[5][(low >> 16) & 0xFFu]
            ^ kTables[4][low >> 24] ^ kTables[3][high & 0xFFu] ^ kTables[2][(high >> 8) & 0xFFu]
            ^ kTables[1][(high >> 16) & 0xFFu] ^ kTables[0][high >> 24];
    }
    for (; size > 0; ++bytes, --size)
        crc = kTables[0][(crc ^ *bytes) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

} // namespace nanscope
