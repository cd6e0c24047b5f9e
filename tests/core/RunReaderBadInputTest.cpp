// Every kind of broken run gets a clear message naming the file and what is wrong, never a crash.
#include "Hdf5Edit.h"
#include "TestRuns.h"

#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <hdf5.h>

#include <filesystem>
#include <fstream>

using namespace nanscope;
namespace fs = std::filesystem;

namespace {

// A good run with scalars and a 3-layer table, closed, ready to be broken.
std::string writeGoodRun(const test::ScratchDir& dir)
{
    RunSchema schema;
    schema.scalars = {"loss", "grad_norm"};
    schema.layers = {"a", "b", "c"};
    auto writer = RunWriter::create(dir.path(), schema);
    EXPECT_TRUE(writer) << writer.error();
    for (int i = 0; i < 50; ++i) {
        (*writer)->appendScalars(i, {{"loss", 1.0}, {"grad_norm", 1.0}});
        (*writer)->appendRow("layers", i, {{"grad_norm", {1, 2, 3}}});
    }
    (*writer)->close();
    return dir / "run.h5";
}

using test::editFile;

void replaceWithDoubles(hid_t file, const char* path, std::vector<hsize_t> dims, const std::vector<double>& values)
{
    H5Ldelete(file, path, H5P_DEFAULT);
    hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    hid_t dset = H5Dcreate2(file, path, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(dset);
    H5Sclose(space);
}

void setStringAttribute(hid_t file, const char* name, const char* value)
{
    H5Adelete(file, name);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, &value);
    H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
}

std::string openError(const test::ScratchDir& dir)
{
    auto reader = RunReader::open(dir.path());
    EXPECT_FALSE(reader) << "a broken run must not open";
    return reader ? std::string() : reader.error();
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "message: " << (text)

} // namespace

TEST(RunReaderBadInput, MissingDirectory)
{
    auto reader = RunReader::open("/nonexistent/run/dir");
    ASSERT_FALSE(reader);
    EXPECT_MENTIONS(reader.error(), "/nonexistent/run/dir");
    EXPECT_MENTIONS(reader.error(), "does not exist");
}

TEST(RunReaderBadInput, MissingRunH5)
{
    test::ScratchDir dir;
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "run.h5");
    EXPECT_MENTIONS(error, "not found");
}

TEST(RunReaderBadInput, NotAnHdf5File)
{
    test::ScratchDir dir;
    std::ofstream(dir / "run.h5") << "loss,grad_norm\n1.0,2.0\n";
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, dir / "run.h5");
    EXPECT_MENTIONS(error, "not an HDF5 file");
}

TEST(RunReaderBadInput, TruncatedFile)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    fs::resize_file(path, fs::file_size(path) / 3);
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, path);
    EXPECT_MENTIONS(error, "truncated");
}

TEST(RunReaderBadInput, WrongFormatAttribute)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) { setStringAttribute(f, "format", "keras-log"); });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "'format' is \"keras-log\"");
}

TEST(RunReaderBadInput, NewerFormatVersion)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) { setStringAttribute(f, "format_version", "2"); });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "format_version 2 is newer");
}

TEST(RunReaderBadInput, DatasetOfTheWrongRank)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) { replaceWithDoubles(f, "/scalars/grad_norm", {25, 2}, std::vector<double>(50, 1.0)); });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "/scalars/grad_norm");
    EXPECT_MENTIONS(error, "rank 2");
}

TEST(RunReaderBadInput, DatasetOfTheWrongType)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) {
        H5Ldelete(f, "/layers/grad_norm", H5P_DEFAULT);
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, 8);
        hsize_t dims[2] = {50, 3};
        hid_t space = H5Screate_simple(2, dims, nullptr);
        hid_t dset = H5Dcreate2(f, "/layers/grad_norm", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dclose(dset);
        H5Sclose(space);
        H5Tclose(type);
    });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "/layers/grad_norm");
    EXPECT_MENTIONS(error, "must hold numbers");
}

TEST(RunReaderBadInput, StepsThatDoNotIncrease)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) {
        hid_t dset = H5Dopen2(f, "/layers/steps", H5P_DEFAULT);
        std::vector<int64_t> steps(50);
        for (int i = 0; i < 50; ++i)
            steps[size_t(i)] = i == 20 ? 5 : i;
        H5Dwrite(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data());
        H5Dclose(dset);
    });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "/layers/steps does not increase");
    EXPECT_MENTIONS(error, "row 20");
}

TEST(RunReaderBadInput, NamesAndColumnsDisagree)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) { replaceWithDoubles(f, "/layers/grad_norm", {50, 2}, std::vector<double>(100, 1.0)); });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "/layers/grad_norm has 2 columns but /layers/names lists 3");
}

TEST(RunReaderBadInput, MissingLoss)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    editFile(path, [](hid_t f) { H5Ldelete(f, "/scalars/loss", H5P_DEFAULT); });
    const std::string error = openError(dir);
    EXPECT_MENTIONS(error, "/scalars/loss is missing");
}

TEST(RunReaderBadInput, OpeningNeverWritesIntoTheRun)
{
    test::ScratchDir dir;
    const std::string path = writeGoodRun(dir);
    const auto before = fs::last_write_time(path);
    const auto size = fs::file_size(path);
    {
        auto reader = RunReader::open(dir.path());
        ASSERT_TRUE(reader) << reader.error();
        ASSERT_TRUE((*reader)->refresh());
    }
    EXPECT_EQ(fs::last_write_time(path), before);
    EXPECT_EQ(fs::file_size(path), size);
    std::vector<std::string> entries;
    for (const auto& e : fs::directory_iterator(dir.path()))
        entries.push_back(e.path().filename().string());
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, (std::vector<std::string>{"batches", "checkpoints", "run.h5"}));
}
