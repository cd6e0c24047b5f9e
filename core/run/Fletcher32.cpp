#include "core/run/Fletcher32.h"

#include "core/CpuFeatures.h"

#include <algorithm>

namespace nanscope::hdf5reads {

namespace {

// Words summed per block in 32-bit lanes: the weighted sum of a block is at most
// 65535 x (1 + 2 + ... + 256) < 2^32.
constexpr size_t kBlockWords = 256;

// The two running sums kept exact (reduced modulo 65535 only when large, never to 0 from a
// non-zero value), so that the fold at the end gives HDF5's 16-bit forms.
struct Sums
{
    uint64_t first = 0;  // the words' sum
    uint64_t second = 0; // the sum of the first sum after each word
};

// Adds `words` words to the sums. Over a block of n words the second sum grows by n times the first
// sum before the block plus each word weighted by the running sums it enters (n - k for the k-th),
// which sums without a dependency from word to word, so the compiler vectorises it.
inline void addWords(const uint8_t* bytes, size_t words, Sums& sums)
{
    for (size_t done = 0; done < words;) {
        const uint32_t count = uint32_t(std::min(kBlockWords, words - done));
        const uint8_t* block = bytes + 2 * done;
        uint32_t plain = 0, weighted = 0;
        for (uint32_t k = 0; k < count; ++k) {
            const uint32_t word = (uint32_t(block[2 * k]) << 8) | block[2 * k + 1];
            plain += word;
            weighted += (count - k) * word;
        }
        sums.second += sums.first * count + weighted;
        sums.first += plain;
        done += count;
        // Keep both far from overflowing: the same residue, and non-zero stays non-zero.
        constexpr uint64_t kLarge = uint64_t(1) << 40;
        if (sums.first >= kLarge)
            sums.first = sums.first % 65535 + 65535;
        if (sums.second >= kLarge)
            sums.second = sums.second % 65535 + 65535;
    }
}

__attribute__((target("avx2"))) void addWordsAvx2(const uint8_t* bytes, size_t words, Sums& sums)
{
    addWords(bytes, words, sums);
}

void addWordsPortable(const uint8_t* bytes, size_t words, Sums& sums)
{
    addWords(bytes, words, sums);
}

// HDF5 folds each sum ((x & 0xffff) + (x >> 16)) until it fits 16 bits: the residue modulo 65535,
// written as 65535 rather than 0 unless the sum itself is 0.
uint32_t folded(uint64_t sum)
{
    return sum == 0 ? 0 : uint32_t((sum - 1) % 65535 + 1);
}

// The checksum with the words summed by `addWordsTo`.
template<void (*addWordsTo)(const uint8_t*, size_t, Sums&)>
uint32_t fletcher32With(const void* data, size_t bytes)
{
    const auto* p = static_cast<const uint8_t*>(data);
    Sums sums;
    addWordsTo(p, bytes / 2, sums);
    if (bytes % 2 != 0) {
        sums.first += uint32_t(p[bytes - 1]) << 8;
        sums.second += sums.first;
    }
    return (folded(sums.second) << 16) | folded(sums.first);
}

} // namespace

uint32_t fletcher32(const void* data, size_t bytes)
{
    return cpu::hasAvx2() ? fletcher32With<addWordsAvx2>(data, bytes) : fletcher32With<addWordsPortable>(data, bytes);
}

uint32_t fletcher32Portable(const void* data, size_t bytes)
{
    return fletcher32With<addWordsPortable>(data, bytes);
}

} // namespace nanscope::hdf5reads
