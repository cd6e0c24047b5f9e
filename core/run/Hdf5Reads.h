#pragma once

// Internal to core/run: the bounded reads RunReader makes of an HDF5 file it does not trust
// (attributes as text, string datasets, names of links and attributes, and the checks that a
// dataset's declared size and filters are what its stored bytes can be).

#include "core/Result.h"

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::hdf5reads {

// An attribute of `object` as text: a string as written, a number printed.
Result<std::string> readStringAttribute(hid_t object, const char* name);

// Callbacks of H5Aiterate2 and H5Literate: push each name into the std::vector<std::string> at `data`.
herr_t collectAttributeName(hid_t, const char* name, const H5A_info_t*, void* data);
herr_t collectLinkName(hid_t, const char* name, const H5L_info_t*, void* data);

// The file starts with the HDF5 signature.
bool isHdf5Signature(const std::string& path);

// A 1-D dataset of strings (fixed or variable length), its entries bounded by what the file holds
// and its variable-length references checked before HDF5 follows them.
Result<std::vector<std::string>> readStringDataset(hid_t dset, const std::string& where, const std::string& filePath,
                                                   uint64_t fileSize);

// The most rows of `rowElements` elements each that a dataset's stored bytes can hold.
hsize_t rowsTheFileCanHold(hid_t dset, hsize_t rowElements, uint64_t fileSize);

// Fails, naming `where`, when the dataset declares more rows (or entries: `unit`) than it can hold.
Status checkDeclaredRows(hid_t dset, hsize_t declared, hsize_t rowElements, uint64_t fileSize,
                         const std::string& where, const char* unit);

// The file's size in bytes, 0 when it cannot be read.
uint64_t fileSizeOf(const std::string& path);

// The dataset's chunks carry a Fletcher-32 checksum.
bool hasChecksum(hid_t dataset);

} // namespace nanscope::hdf5reads
