#pragma once

// Tests that lie to the reader edit a written run.h5 with HDF5 directly.

#include <hdf5.h>

#include <gtest/gtest.h>

#include <string>

namespace nanscope::test {

// Opens the file read-write with HDF5 and hands it to `edit`.
template<typename Edit>
void editFile(const std::string& path, Edit edit)
{
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    edit(file);
    H5Fclose(file);
}

} // namespace nanscope::test
