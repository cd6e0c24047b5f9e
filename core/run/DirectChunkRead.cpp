#include "core/run/DirectChunkRead.h"

#include "core/run/Fletcher32.h"
#include "core/run/Hdf5Handle.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nanscope::hdf5reads {

namespace {

// A chunk larger than this is read by HDF5 (its own buffer, its own bounds): the fast path's
// buffer stays small, whatever a damaged file declares.
constexpr hsize_t kMostChunkBytes = hsize_t(64) << 20;

} // namespace

std::optional<RowChunks> rowChunksOf(hid_t dataset)
{
    hdf5::Handle space = hdf5::space(H5Dget_space(dataset));
    if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 2)
        return std::nullopt;
    RowChunks layout;
    hsize_t dims[2] = {0, 0};
    if (H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 2)
        return std::nullopt;
    layout.rows = dims[0];
    layout.columns = dims[1];

    hdf5::Handle type = hdf5::type(H5Dget_type(dataset));
    if (!type.valid() || H5Tequal(type.get(), H5T_NATIVE_FLOAT) <= 0)
        return std::nullopt;

    hdf5::Handle plist = hdf5::plist(H5Dget_create_plist(dataset));
    if (!plist.valid() || H5Pget_layout(plist.get()) != H5D_CHUNKED)
        return std::nullopt;
    hsize_t chunk[2] = {0, 0};
    if (H5Pget_chunk(plist.get(), 2, chunk) != 2 || chunk[0] == 0 || chunk[1] == 0)
        return std::nullopt;
    if (chunk[0] > kMostChunkBytes / sizeof(float) / chunk[1])
        return std::nullopt;
    layout.chunkRows = chunk[0];
    layout.chunkColumns = chunk[1];

    const int filters = H5Pget_nfilters(plist.get());
    if (filters < 0 || filters > 1)
        return std::nullopt;
    if (filters == 1) {
        unsigned flags = 0;
        size_t values = 0;
        unsigned config = 0;
        if (H5Pget_filter2(plist.get(), 0, &flags, &values, nullptr, 0, nullptr, &config) != H5Z_FILTER_FLETCHER32)
            return std::nullopt;
        layout.checksummed = true;
    }
    return layout;
}

bool readRowsDirect(hid_t dataset, const RowChunks& layout, hsize_t rowBegin, hsize_t rowCount, float* out)
{
    if (rowCount == 0)
        return true;
    if (rowBegin > layout.rows || rowCount > layout.rows - rowBegin)
        return false;
    const hsize_t chunkValues = layout.chunkRows * layout.chunkColumns;
    const hsize_t dataBytes = chunkValues * sizeof(float);
    const hsize_t storedBytes = dataBytes + (layout.checksummed ? 4 : 0);
    std::vector<unsigned char> stored(storedBytes);
    const hsize_t rowEnd = rowBegin + rowCount;
    const hsize_t firstBand = rowBegin / layout.chunkRows * layout.chunkRows;
    for (hsize_t band = firstBand; band < rowEnd; band += layout.chunkRows) {
        const hsize_t from = std::max(band, rowBegin);
        const hsize_t to = std::min(band + layout.chunkRows, rowEnd);
        for (hsize_t column = 0; column < layout.columns; column += layout.chunkColumns) {
            hsize_t offset[2] = {band, column};
            hsize_t size = 0;
            uint32_t skipped = 0;
            herr_t read = -1;
            // Failures are expected here (an unwritten chunk) and answered by HDF5's read: not printed.
            H5E_BEGIN_TRY
            {
                // The stored size first: H5Dread_chunk writes whatever the file holds into the buffer.
                if (H5Dget_chunk_storage_size(dataset, offset, &size) >= 0 && size == storedBytes)
                    read = H5Dread_chunk(dataset, H5P_DEFAULT, offset, &skipped, stored.data());
            }
            H5E_END_TRY;
            if (read < 0 || skipped != 0)
                return false;
            if (layout.checksummed) {
                // Stored little-endian after the data.
                const unsigned char* tail = stored.data() + dataBytes;
                const uint32_t checksum = uint32_t(tail[0]) | uint32_t(tail[1]) << 8 | uint32_t(tail[2]) << 16 | uint32_t(tail[3]) << 24;
                if (fletcher32(stored.data(), size_t(dataBytes)) != checksum)
                    return false;
            }
            const hsize_t width = std::min(layout.chunkColumns, layout.columns - column);
            for (hsize_t row = from; row < to; ++row)
                std::memcpy(out + (row - rowBegin) * layout.columns + column,
                            stored.data() + (row - band) * layout.chunkColumns * sizeof(float), width * sizeof(float));
        }
    }
    return true;
}

} // namespace nanscope::hdf5reads
