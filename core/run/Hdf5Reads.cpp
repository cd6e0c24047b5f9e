#include "core/run/Hdf5Reads.h"

#include "core/run/Hdf5Handle.h"
#include "core/run/StringHeapCheck.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace nanscope::hdf5reads {

namespace fs = std::filesystem;

Result<std::string> readStringAttribute(hid_t object, const char* name)
{
    hdf5::Handle attr = hdf5::attribute(H5Aopen(object, name, H5P_DEFAULT));
    if (!attr.valid())
        return Error{"cannot open attribute: " + hdf5::lastErrorMessage()};
    // Every read below has room for one value: an array attribute (layer sizes, a list of tags)
    // is described, never read.
    hdf5::Handle space = hdf5::space(H5Aget_space(attr.get()));
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    if (count < 0)
        return Error{"cannot read the attribute's shape"};
    if (count != 1)
        return "(array of " + std::to_string(count) + ")";
    hdf5::Handle fileType = hdf5::type(H5Aget_type(attr.get()));
    H5T_class_t cls = H5Tget_class(fileType.get());
    if (cls == H5T_STRING) {
        if (H5Tis_variable_str(fileType.get()) > 0) {
            // Same character set as the file: HDF5 does not convert ASCII <-> UTF-8.
            hdf5::Handle memType = hdf5::type(H5Tcopy(fileType.get()));
            char* text = nullptr;
            if (H5Aread(attr.get(), memType.get(), &text) < 0)
                return Error{"cannot read string attribute"};
            std::string value = text ? text : "";
            H5free_memory(text);
            return value;
        }
        size_t size = H5Tget_size(fileType.get());
        std::string buffer(size, '\0');
        hdf5::Handle memType = hdf5::type(H5Tcopy(fileType.get()));
        if (H5Aread(attr.get(), memType.get(), buffer.data()) < 0)
            return Error{"cannot read string attribute"};
        buffer.erase(std::find(buffer.begin(), buffer.end(), '\0'), buffer.end());
        return buffer;
    }
    if (cls == H5T_INTEGER) {
        long long value = 0;
        if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &value) < 0)
            return Error{"cannot read integer attribute"};
        return std::to_string(value);
    }
    if (cls == H5T_FLOAT) {
        double value = 0;
        if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) < 0)
            return Error{"cannot read float attribute"};
        return std::to_string(value);
    }
    return Error{"attribute is neither a string nor a number"};
}

herr_t collectAttributeName(hid_t, const char* name, const H5A_info_t*, void* data)
{
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
}

herr_t collectLinkName(hid_t, const char* name, const H5L_info_t*, void* data)
{
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
}

bool isHdf5Signature(const std::string& path)
{
    // The superblock sits at 0, 512, 1024, ...; checking 0 is what every writer we support does.
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    in.read(magic, 8);
    static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    return in.gcount() == 8 && std::equal(magic, magic + 8, kSignature);
}

Result<std::vector<std::string>> readStringDataset(hid_t dset, const std::string& where, const std::string& filePath,
                                                   uint64_t fileSize)
{
    hdf5::Handle fileType = hdf5::type(H5Dget_type(dset));
    if (H5Tget_class(fileType.get()) != H5T_STRING)
        return Error{where + " must hold strings"};
    hdf5::Handle fileSpace = hdf5::space(H5Dget_space(dset));
    if (H5Sget_simple_extent_ndims(fileSpace.get()) != 1)
        return Error{where + " must be 1-D"};
    hsize_t n = 0;
    H5Sget_simple_extent_dims(fileSpace.get(), &n, nullptr);
    if (Status fits = checkDeclaredRows(dset, n, 1, fileSize, where, "entries"); !fits)
        return Error{fits.error()};
    std::vector<std::string> out;
    out.reserve(n);
    if (n == 0)
        return out;
    if (H5Tis_variable_str(fileType.get()) > 0) {
        if (Status bounded = hdf5::checkStringHeapReferences(dset, n, filePath, where); !bounded)
            return Error{bounded.error()};
        hdf5::Handle memType = hdf5::type(H5Tcopy(fileType.get()));
        std::vector<char*> raw(n, nullptr);
        if (H5Dread(dset, memType.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0)
            return Error{"cannot read " + where + ": " + hdf5::lastErrorMessage()};
        for (char* s : raw)
            out.emplace_back(s ? s : "");
        H5Dvlen_reclaim(memType.get(), fileSpace.get(), H5P_DEFAULT, raw.data());
        return out;
    }
    size_t size = H5Tget_size(fileType.get());
    std::vector<char> buffer(size * n, '\0');
    hdf5::Handle memType = hdf5::type(H5Tcopy(fileType.get()));
    if (H5Dread(dset, memType.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0)
        return Error{"cannot read " + where + ": " + hdf5::lastErrorMessage()};
    for (hsize_t i = 0; i < n; ++i) {
        const char* begin = buffer.data() + i * size;
        out.emplace_back(begin, std::find(begin, begin + size, '\0'));
    }
    return out;
}

// The most rows of `rowElements` elements each that a dataset's stored bytes can hold. The extent
// alone proves nothing: chunks never written read as fill values, so a few kilobytes can declare
// 2^62 rows, and believing it means allocating them. Stored bytes are the dataset's allocated
// storage, never more than the file itself; a compression filter can at best shrink data by
// deflate's limit of about 1:1032; a partly written last chunk is allowed for.
hsize_t rowsTheFileCanHold(hid_t dset, hsize_t rowElements, uint64_t fileSize)
{
    constexpr double kBestCompressionRatio = 1032;
    constexpr hsize_t kPartialChunkRows = 1024;
    hdf5::Handle type = hdf5::type(H5Dget_type(dset));
    hdf5::Handle createList = hdf5::plist(H5Dget_create_plist(dset));
    const double storedBytes = double(std::min<uint64_t>(H5Dget_storage_size(dset), fileSize));
    const double ratio = H5Pget_nfilters(createList.get()) > 0 ? kBestCompressionRatio : 1.0;
    const double rowBytes = double(std::max<size_t>(H5Tget_size(type.get()), 1)) * double(std::max<hsize_t>(rowElements, 1));
    return hsize_t(storedBytes * ratio / rowBytes) + kPartialChunkRows;
}

Status checkDeclaredRows(hid_t dset, hsize_t declared, hsize_t rowElements, uint64_t fileSize,
                         const std::string& where, const char* unit)
{
    const hsize_t most = rowsTheFileCanHold(dset, rowElements, fileSize);
    if (declared > most)
        return Error{where + " declares " + std::to_string(declared) + " " + unit + " but the file holds at most " +
                     std::to_string(most)};
    return Status::success();
}

uint64_t fileSizeOf(const std::string& path)
{
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : uint64_t(size);
}

// The dataset's chunks carry a Fletcher-32 checksum (read through its filters: asking for one
// filter by id reports a missing one as an HDF5 error).
bool hasChecksum(hid_t dataset)
{
    hdf5::Handle creation = hdf5::plist(H5Dget_create_plist(dataset));
    const int filters = creation.get() < 0 ? 0 : H5Pget_nfilters(creation.get());
    for (int i = 0; i < filters; ++i) {
        unsigned flags = 0;
        size_t values = 0;
        unsigned config = 0;
        if (H5Pget_filter2(creation.get(), unsigned(i), &flags, &values, nullptr, 0, nullptr, &config) ==
            H5Z_FILTER_FLETCHER32)
            return true;
    }
    return false;
}

} // namespace nanscope::hdf5reads
