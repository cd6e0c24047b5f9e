#pragma once

// Internal to core/run: RunReader's fast path for whole rows of a float32 [n, L] table. It reads
// each chunk's stored bytes (H5Dread_chunk), checks the Fletcher-32 checksum itself and copies the
// rows out. HDF5's own read holds the library's global lock through its checksum and the copy into
// the caller's rows; here only the chunk's lookup and read hold it, so two threads (the scan's
// vanishing stream beside the other rules) read in parallel, and the checksum is the faster one of
// Fletcher32.h.
//
// It never decides that a file is damaged: any chunk that is not exactly as the dataset's layout
// says (not written yet, stored at another size, a filter skipped, a checksum that does not match)
// makes it answer false, and the caller reads the rows through HDF5, which fills unwritten chunks
// and names the damage as it always has.

#include <hdf5.h>

#include <cstdint>
#include <optional>

namespace nanscope::hdf5reads {

// How a dataset this path can read is stored: 2-D, chunked, native float32, with Fletcher-32 as
// its only filter or no filter at all.
struct RowChunks
{
    hsize_t rows = 0;          // the dataset's extent
    hsize_t columns = 0;
    hsize_t chunkRows = 0;
    hsize_t chunkColumns = 0;
    bool checksummed = false;  // each stored chunk ends with its 4-byte Fletcher-32
};

// The dataset's layout, or nothing when HDF5 must read it (another type, rank, layout or filter).
std::optional<RowChunks> rowChunksOf(hid_t dataset);

// Rows [rowBegin, rowBegin + rowCount) of every column into `out` (rowCount x columns, row by
// row). False, with `out` partly written, when a chunk is not as `layout` says; the rows must then
// be read through HDF5.
bool readRowsDirect(hid_t dataset, const RowChunks& layout, hsize_t rowBegin, hsize_t rowCount, float* out);

} // namespace nanscope::hdf5reads
