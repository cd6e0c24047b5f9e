#include "core/source/Crc32c.h"

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
