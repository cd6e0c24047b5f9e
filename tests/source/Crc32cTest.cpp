#include "core/importers/Crc32c.h"

#include <gtest/gtest.h>

#include <string>

using namespace nanscope;

TEST(Crc32c, KnownAnswers)
{
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u); // the check value of CRC-32C
    EXPECT_EQ(crc32c("", 0), 0u);
    // 32 zero bytes: the iSCSI test vector of RFC 3720 (B.4).
    const std::string zeros(32, '\0');
    EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32c, ContinuesOverPieces)
{
    const uint32_t whole = crc32c("123456789", 9);
    EXPECT_EQ(crc32c("56789", 5, crc32c("1234", 4)), whole);
}

TEST(Crc32c, MaskIsTheTfRecordRotation)
{
    // masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
    EXPECT_EQ(maskCrc32c(0), 0xa282ead8u);
    EXPECT_EQ(maskCrc32c(0xE3069283u), uint32_t(((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u));
    EXPECT_NE(maskCrc32c(1), maskCrc32c(2));
}

// crc32c reads eight bytes at a time: every length and starting offset (the tail, an odd start,
// a piece boundary inside an eight-byte step) must give what the plain bitwise definition gives.
TEST(Crc32c, AgreesWithTheBitwiseDefinitionAtEveryLengthAndOffset)
{
    auto bitwise = [](const unsigned char* bytes, size_t size) {
        uint32_t crc = 0xFFFFFFFFu;
        for (size_t i = 0; i < size; ++i) {
            crc ^= bytes[i];
            for (int bit = 0; bit < 8; ++bit)
                crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
        return ~crc;
    };
    std::string bytes(80, '\0');
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = char((i * 151 + 7) & 0xFF);
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    // Both forms: the processor's instruction where it has one, and the tables everywhere else.
    for (auto* crc : {&crc32c, &crc32cPortable})
        for (size_t offset = 0; offset < 8; ++offset)
            for (size_t size = 0; offset + size <= bytes.size(); ++size) {
                ASSERT_EQ(crc(data + offset, size, 0), bitwise(data + offset, size)) << offset << " " << size;
                const size_t split = size / 3;
                ASSERT_EQ(crc(data + offset + split, size - split, crc(data + offset, split, 0)),
                          bitwise(data + offset, size));
            }
}
