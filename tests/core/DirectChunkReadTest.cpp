// RunReader reads whole rows of a finished run's [n, L] tables chunk by chunk, raw, and checks
// HDF5's Fletcher-32 itself (core/run/DirectChunkRead.h). What a user would notice if it were
// wrong: other numbers than HDF5's own read gives, a damaged chunk plotted instead of refused, or
// an unwritten stretch of a table read as garbage instead of the fill value.
#include "TestRuns.h"

#include "core/run/DirectChunkRead.h"
#include "core/run/Fletcher32.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <hdf5.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

using namespace nanscope;
namespace fs = std::filesystem;

namespace {

struct Hdf5File
{
    explicit Hdf5File(const std::string& path)
        : id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT))
    {
    }
    ~Hdf5File() { H5Fclose(id); }
    hid_t id;
};

// A chunked dataset of `type` with the given filters, written whole from `data` (rows x columns
// elements; 1-D when columns is 0).
hid_t writeDataset(hid_t file, const char* name, hid_t type, const void* data, hsize_t rows, hsize_t columns,
                   hsize_t chunkRows, hsize_t chunkColumns, bool fletcher, bool shuffle = false)
{
    const int rank = columns ? 2 : 1;
    hsize_t dims[2] = {rows, columns}, chunk[2] = {chunkRows, chunkColumns};
    hid_t space = H5Screate_simple(rank, dims, nullptr);
    hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, rank, chunk);
    if (shuffle)
        H5Pset_shuffle(plist);
    if (fletcher)
        H5Pset_fletcher32(plist);
    hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    if (data)
        H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Pclose(plist);
    H5Sclose(space);
    return dataset;
}

// The checksum HDF5 stored after the chunk at `offset`, and the chunk's bytes before it.
uint32_t storedChecksum(hid_t dataset, const hsize_t* offset, std::vector<unsigned char>& bytes)
{
    hsize_t size = 0;
    EXPECT_GE(H5Dget_chunk_storage_size(dataset, offset, &size), 0);
    EXPECT_GE(size, 4u);
    std::vector<unsigned char> stored(size);
    uint32_t skipped = 0;
    EXPECT_GE(H5Dread_chunk(dataset, H5P_DEFAULT, offset, &skipped, stored.data()), 0);
    bytes.assign(stored.begin(), stored.end() - 4);
    const unsigned char* tail = stored.data() + size - 4;
    return uint32_t(tail[0]) | uint32_t(tail[1]) << 8 | uint32_t(tail[2]) << 16 | uint32_t(tail[3]) << 24;
}

// HDF5's own read of rows [begin, begin + count) of a float [n, L] dataset.
std::vector<float> readThroughHdf5(hid_t dataset, hsize_t begin, hsize_t count, hsize_t columns)
{
    std::vector<float> out(count * columns);
    hsize_t start[2] = {begin, 0}, size[2] = {count, columns};
    hid_t file = H5Dget_space(dataset);
    H5Sselect_hyperslab(file, H5S_SELECT_SET, start, nullptr, size, nullptr);
    hid_t memory = H5Screate_simple(2, size, nullptr);
    EXPECT_GE(H5Dread(dataset, H5T_NATIVE_FLOAT, memory, file, H5P_DEFAULT, out.data()), 0);
    H5Sclose(memory);
    H5Sclose(file);
    return out;
}

// Values of every kind a log holds: ordinary, zero, negative zero, subnormal, huge, Inf, NaN with
// payloads.
std::vector<float> awkwardFloats(size_t count, uint32_t seed)
{
    std::mt19937 random(seed);
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
        uint32_t bits = random();
        switch (bits % 11) {
        case 0: values[i] = 0.f; break;
        case 1: values[i] = -0.f; break;
        case 2: values[i] = std::numeric_limits<float>::infinity(); break;
        case 3: values[i] = std::numeric_limits<float>::denorm_min() * float(bits % 1000); break;
        case 4: // a NaN with a payload
            bits |= 0x7F800001u;
            std::memcpy(&values[i], &bits, sizeof(float));
            break;
        default: values[i] = std::ldexp(float(bits % 100000) / 1000.f - 50.f, int(bits % 60) - 30);
        }
    }
    return values;
}

} // namespace

// Every chunk length (odd ones included) and the data whose sums fold to HDF5's 0 and 65535 forms:
// our checksum is the one HDF5 stores, or every fast read would fall back (or, worse, pass damage).
TEST(DirectChunkRead, Fletcher32IsTheChecksumHdf5Stores)
{
    test::ScratchDir dir;
    Hdf5File file(dir / "bytes.h5");
    ASSERT_GE(file.id, 0);
    std::mt19937 random(7);
    int compared = 0;
    for (const hsize_t length : {hsize_t(1), hsize_t(2), hsize_t(3), hsize_t(7), hsize_t(719), hsize_t(720),
                                 hsize_t(721), hsize_t(4096), hsize_t(65537)}) {
        for (const int pattern : {0, 1, 2}) { // zeros, 0xFF, random
            std::vector<unsigned char> data(length * 3);
            for (auto& byte : data)
                byte = pattern == 0 ? 0 : pattern == 1 ? 0xFF : static_cast<unsigned char>(random());
            const std::string name = "d" + std::to_string(length) + "_" + std::to_string(pattern);
            hid_t dataset = writeDataset(file.id, name.c_str(), H5T_NATIVE_UINT8, data.data(), length * 3, 0, length, 0, true);
            ASSERT_GE(dataset, 0);
            for (hsize_t chunk = 0; chunk < 3; ++chunk) {
                const hsize_t offset[1] = {chunk * length};
                std::vector<unsigned char> bytes;
                const uint32_t stored = storedChecksum(dataset, offset, bytes);
                ASSERT_EQ(bytes.size(), length);
                // Both builds: AVX2 where this processor has it, and the baseline one.
                EXPECT_EQ(hdf5reads::fletcher32(bytes.data(), bytes.size()), stored)
                    << length << " bytes, pattern " << pattern << ", chunk " << chunk;
                EXPECT_EQ(hdf5reads::fletcher32Portable(bytes.data(), bytes.size()), stored)
                    << length << " bytes, pattern " << pattern << ", chunk " << chunk << " (baseline build)";
                ++compared;
            }
            H5Dclose(dataset);
        }
    }
    EXPECT_EQ(compared, 9 * 3 * 3);
}

// Rows read raw are HDF5's rows, bit for bit: blocks that start and end inside chunks, a last
// chunk column only partly used, the last row, with and without the checksum filter.
TEST(DirectChunkRead, RowsAreHdf5sOwnBitForBit)
{
    test::ScratchDir dir;
    Hdf5File file(dir / "rows.h5");
    const hsize_t rows = 1300, columns = 37;
    const std::vector<float> values = awkwardFloats(rows * columns, 11);
    for (const bool fletcher : {true, false}) {
        hid_t dataset = writeDataset(file.id, fletcher ? "checked" : "plain", H5T_NATIVE_FLOAT, values.data(), rows,
                                     columns, 512, 16, fletcher);
        const auto layout = hdf5reads::rowChunksOf(dataset);
        ASSERT_TRUE(layout) << "a float32 [n, L] chunked dataset takes the fast path";
        EXPECT_EQ(layout->checksummed, fletcher);
        EXPECT_EQ(layout->columns, columns);
        for (const auto& [begin, count] : {std::pair<hsize_t, hsize_t>{0, rows}, {100, 513}, {511, 2}, {1299, 1},
                                           {1024, 276}, {700, 0}}) {
            std::vector<float> direct(count * columns, 12345.f);
            ASSERT_TRUE(hdf5reads::readRowsDirect(dataset, *layout, begin, count, direct.data()))
                << "rows " << begin << " + " << count;
            const std::vector<float> expected = readThroughHdf5(dataset, begin, count, columns);
            ASSERT_EQ(direct.size(), expected.size());
            if (!direct.empty())
                EXPECT_EQ(std::memcmp(direct.data(), expected.data(), direct.size() * sizeof(float)), 0)
                    << "rows " << begin << " + " << count << (fletcher ? " (checksummed)" : "");
        }
        std::vector<float> past(columns);
        EXPECT_FALSE(hdf5reads::readRowsDirect(dataset, *layout, rows, 1, past.data())) << "a row past the end";
        H5Dclose(dataset);
    }
}

// Layouts the fast path does not know are left to HDF5: another type, another filter, contiguous.
TEST(DirectChunkRead, OtherLayoutsAreLeftToHdf5)
{
    test::ScratchDir dir;
    Hdf5File file(dir / "others.h5");
    const std::vector<double> doubles(64 * 4, 1.0);
    const std::vector<float> floats(64 * 4, 1.f);
    hid_t asDouble = writeDataset(file.id, "double", H5T_NATIVE_DOUBLE, doubles.data(), 64, 4, 16, 4, true);
    hid_t shuffled = writeDataset(file.id, "shuffled", H5T_NATIVE_FLOAT, floats.data(), 64, 4, 16, 4, true, true);
    hsize_t dims[2] = {64, 4};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t contiguous = H5Dcreate2(file.id, "contiguous", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(space);
    EXPECT_FALSE(hdf5reads::rowChunksOf(asDouble));
    EXPECT_FALSE(hdf5reads::rowChunksOf(shuffled));
    EXPECT_FALSE(hdf5reads::rowChunksOf(contiguous));
    for (hid_t dataset : {asDouble, shuffled, contiguous})
        H5Dclose(dataset);
}

// A chunk whose bytes were damaged on disk fails the fast path's checksum, and so does one the
// writer never wrote: the caller then reads through HDF5, which refuses the damage and fills the
// gap, and RunReader reports what HDF5 says.
TEST(DirectChunkRead, DamagedAndUnwrittenChunksAreLeftToHdf5)
{
    test::ScratchDir dir;
    const std::string path = dir / "damaged.h5";
    const hsize_t rows = 1024, columns = 16;
    const std::vector<float> values = awkwardFloats(rows * columns, 3);
    haddr_t address = 0;
    {
        Hdf5File file(path);
        hid_t dataset = writeDataset(file.id, "values", H5T_NATIVE_FLOAT, values.data(), rows, columns, 512, 16, true);
        const hsize_t second[2] = {512, 0};
        unsigned mask = 0;
        hsize_t size = 0;
        ASSERT_GE(H5Dget_chunk_info_by_coord(dataset, second, &mask, &address, &size), 0);
        // A dataset of 2,048 rows of which only the first chunk was written.
        hid_t sparse = writeDataset(file.id, "sparse", H5T_NATIVE_FLOAT, nullptr, 2048, columns, 512, 16, true);
        hsize_t start[2] = {0, 0}, count[2] = {512, columns};
        hid_t fileSpace = H5Dget_space(sparse);
        H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, start, nullptr, count, nullptr);
        hid_t memory = H5Screate_simple(2, count, nullptr);
        H5Dwrite(sparse, H5T_NATIVE_FLOAT, memory, fileSpace, H5P_DEFAULT, values.data());
        H5Sclose(memory);
        H5Sclose(fileSpace);
        H5Dclose(sparse);
        H5Dclose(dataset);
    }
    {
        std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(std::streamoff(address + 100));
        file.put('\x5a');
    }
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    hid_t dataset = H5Dopen2(file, "values", H5P_DEFAULT);
    const auto layout = hdf5reads::rowChunksOf(dataset);
    ASSERT_TRUE(layout);
    std::vector<float> out(rows * columns);
    EXPECT_TRUE(hdf5reads::readRowsDirect(dataset, *layout, 0, 512, out.data())) << "the first chunk is intact";
    EXPECT_EQ(std::memcmp(out.data(), values.data(), 512 * columns * sizeof(float)), 0);
    EXPECT_FALSE(hdf5reads::readRowsDirect(dataset, *layout, 0, rows, out.data())) << "the damaged chunk passed";
    H5E_BEGIN_TRY
    {
        hsize_t start[2] = {512, 0}, count[2] = {512, columns};
        hid_t fileSpace = H5Dget_space(dataset);
        H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, start, nullptr, count, nullptr);
        hid_t memory = H5Screate_simple(2, count, nullptr);
        EXPECT_LT(H5Dread(dataset, H5T_NATIVE_FLOAT, memory, fileSpace, H5P_DEFAULT, out.data()), 0)
            << "HDF5 refuses the damaged chunk too";
        H5Sclose(memory);
        H5Sclose(fileSpace);
    }
    H5E_END_TRY;
    H5Dclose(dataset);

    hid_t sparse = H5Dopen2(file, "sparse", H5P_DEFAULT);
    const auto sparseLayout = hdf5reads::rowChunksOf(sparse);
    ASSERT_TRUE(sparseLayout);
    std::vector<float> gap(512 * columns);
    EXPECT_FALSE(hdf5reads::readRowsDirect(sparse, *sparseLayout, 1024, 512, gap.data())) << "an unwritten chunk";
    H5Dclose(sparse);
    H5Fclose(file);
}

// Through RunReader: a written run's blocks, at any offset, are the values of HDF5's own column
// reads, for a width that leaves the last chunk column part-filled.
TEST(DirectChunkRead, RunReaderBlocksMatchItsColumnReads)
{
    test::ScratchDir dir;
    RunSchema schema;
    for (int l = 0; l < 37; ++l)
        schema.layers.push_back("layer" + std::to_string(l) + ".weight");
    const int64_t rows = 1500;
    {
        auto writer = RunWriter::create(dir.path(), schema);
        ASSERT_TRUE(writer) << writer.error();
        std::vector<int64_t> steps(rows);
        std::vector<float> loss(rows, 1.f);
        for (int64_t r = 0; r < rows; ++r)
            steps[size_t(r)] = r;
        const std::vector<float> grad = awkwardFloats(size_t(rows) * 37, 5);
        const std::vector<float> param = awkwardFloats(size_t(rows) * 37, 6);
        const std::vector<float> nonfinite(size_t(rows) * 37, 0.f);
        ASSERT_TRUE((*writer)->appendRows("scalars", steps, {{"loss", loss}}));
        ASSERT_TRUE((*writer)->appendRows("layers", steps,
                                          {{"grad_norm", grad}, {"param_norm", param}, {"grad_nonfinite", nonfinite}}));
        ASSERT_TRUE((*writer)->close());
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    std::vector<std::vector<float>> columns;
    for (int64_t l = 0; l < 37; ++l) {
        auto column = (*reader)->readColumn("layers", "grad_norm", l);
        ASSERT_TRUE(column) << column.error();
        columns.push_back(*column);
    }
    std::vector<float> block;
    for (const auto& [begin, count] : {std::pair<int64_t, int64_t>{0, rows}, {333, 700}, {1499, 1}}) {
        ASSERT_TRUE((*reader)->readBlockInto("layers", "grad_norm", begin, count, block));
        ASSERT_EQ(block.size(), size_t(count) * 37);
        for (int64_t r = 0; r < count; ++r)
            for (size_t l = 0; l < 37; ++l)
                ASSERT_EQ(std::memcmp(&block[size_t(r) * 37 + l], &columns[l][size_t(begin + r)], sizeof(float)), 0)
                    << "row " << begin + r << ", layer " << l;
    }
}
