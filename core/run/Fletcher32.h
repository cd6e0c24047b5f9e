#pragma once

// Internal to core/run: the Fletcher-32 checksum HDF5 stores after each chunk of a dataset written
// with its "fletcher32" filter (H5Z_FILTER_FLETCHER32), computed here so that RunReader can check
// the chunks it reads raw. The library's own loop adds one 16-bit word at a time; this one sums
// blocks of words as vector code, about four times as fast on AVX2 and twice without.

#include <cstddef>
#include <cstdint>

namespace nanscope::hdf5reads {

// HDF5's checksum of `bytes` bytes: Fletcher's two running sums over the bytes read as big-endian
// 16-bit words (a last odd byte is the high half of a word), each folded modulo 65535 into 16 bits,
// where a sum is 0 only when every word was 0. The first sum is the low half of the result.
// Sums as AVX2 vector code where the processor has it (core/CpuFeatures.h), else as fletcher32Portable.
uint32_t fletcher32(const void* data, size_t bytes);

// The same checksum compiled for the baseline x86-64 processor (tests compare the two).
uint32_t fletcher32Portable(const void* data, size_t bytes);

} // namespace nanscope::hdf5reads
