#pragma once

// CRC-32C (Castagnoli), the checksum TFRecord framing uses: TensorBoard event files carry one over
// each record's length field and one over its data. zlib only has the other CRC-32 polynomial.

#include <cstddef>
#include <cstdint>

namespace nanscope {

// The CRC-32C of size bytes; pass a previous result as crc to continue over more bytes.
// crc32c("123456789") == 0xE3069283.
// Uses the processor's crc32 instruction (SSE4.2) where it has one, else crc32cPortable.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The same CRC from lookup tables, with no processor-specific code (tests compare the two).
uint32_t crc32cPortable(const void* data, size_t size, uint32_t crc = 0);

// TFRecord stores CRCs rotated and offset ("masked"), so that a CRC computed over bytes that
// themselves contain CRCs does not degenerate.
inline uint32_t maskCrc32c(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

} // namespace nanscope
