#include "core/run/StringHeapCheck.h"

#include "core/run/Hdf5Handle.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

namespace nanscope::hdf5 {

namespace {

// HDF5 file format specification, version 2 superblock and earlier alike: a variable-length
// element on disk is a 4-byte sequence length followed by a global heap ID (the collection's
// address, "size of offsets" bytes, and a 4-byte object index). A collection starts with "GCOL",
// a version byte (1), three reserved bytes and its size ("size of lengths" bytes).
constexpr char kCollectionSignature[4] = {'G', 'C', 'O', 'L'};
constexpr unsigned kCollectionVersion = 1;

uint64_t littleEndian(const unsigned char* bytes, size_t count)
{
    uint64_t value = 0;
    for (size_t i = count; i-- > 0;)
        value = (value << 8) | bytes[i];
    return value;
}

class FileBytes
{
public:
    explicit FileBytes(const std::string& path)
        : m_in(path, std::ios::binary)
    {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        m_size = ec ? 0 : uint64_t(size);
    }
    uint64_t size() const { return m_size; }
    // False when [offset, offset + count) is not inside the file.
    bool read(uint64_t offset, size_t count, std::vector<unsigned char>& out)
    {
        if (offset > m_size || count > m_size - offset)
            return false;
        out.resize(count);
        m_in.clear();
        m_in.seekg(std::streamoff(offset));
        m_in.read(reinterpret_cast<char*>(out.data()), std::streamsize(count));
        return m_in.gcount() == std::streamsize(count);
    }

private:
    std::ifstream m_in;
    uint64_t m_size = 0;
};

struct Checker
{
    FileBytes& file;
    size_t addressBytes;
    size_t lengthBytes;
    const std::string& where;
    std::map<uint64_t, uint64_t> collectionSizes; // address -> declared size, once checked
    uint64_t totalLength = 0;

    size_t elementBytes() const { return 4 + addressBytes + 4; }

    Status collection(uint64_t address, uint64_t& size)
    {
        if (auto it = collectionSizes.find(address); it != collectionSizes.end()) {
            size = it->second;
            return Status::success();
        }
        std::vector<unsigned char> header;
        const size_t headerBytes = 8 + lengthBytes;
        if (!file.read(address, headerBytes, header))
            return Error{"points at a string heap at byte " + std::to_string(address) + ", past the end of the file (" +
                         std::to_string(file.size()) + " bytes)"};
        if (!std::equal(kCollectionSignature, kCollectionSignature + 4, header.begin()) ||
            header[4] != kCollectionVersion)
            return Error{"points at byte " + std::to_string(address) + ", which holds no string heap"};
        size = littleEndian(header.data() + 8, lengthBytes);
        if (size < headerBytes || size > file.size() - address)
            return Error{"points at a string heap that declares " + std::to_string(size) + " bytes at byte " +
                         std::to_string(address) + " of a file of " + std::to_string(file.size()) + " bytes"};
        collectionSizes[address] = size;
        return Status::success();
    }

    // Checks `count` elements stored in `raw`, the first of which is element `first`.
    Status elements(const unsigned char* raw, uint64_t first, uint64_t count)
    {
        for (uint64_t i = 0; i < count; ++i) {
            const unsigned char* element = raw + i * elementBytes();
            const uint64_t length = littleEndian(element, 4);
            if (length == 0)
                continue; // an empty string: libhdf5 reads no heap for it
            const uint64_t address = littleEndian(element + 4, addressBytes);
            uint64_t size = 0;
            Status inFile = collection(address, size);
            if (inFile && length > size)
                inFile = Error{"declares " + std::to_string(length) + " bytes in a string heap of " +
                               std::to_string(size)};
            totalLength += length;
            if (inFile && totalLength > file.size())
                inFile = Error{"brings the strings to " + std::to_string(totalLength) +
                               " bytes, more than the whole file holds (" + std::to_string(file.size()) + ")"};
            if (!inFile)
                return Error{where + ": string " + std::to_string(first + i) + " " + inFile.error() +
                             "; the file is corrupted"};
        }
        return Status::success();
    }
};

bool isDeflateOnly(hid_t createList)
{
    if (H5Pget_nfilters(createList) != 1)
        return false;
    unsigned flags = 0;
    size_t values = 0;
    char name[32];
    unsigned config = 0;
    return H5Pget_filter2(createList, 0, &flags, &values, nullptr, sizeof name, name, &config) == H5Z_FILTER_DEFLATE;
}

} // namespace

Status checkStringHeapReferences(hid_t dataset, uint64_t elements, const std::string& filePath,
                                 const std::string& where)
{
    if (elements == 0)
        return Status::success();
    Handle fileId(H5Iget_file_id(dataset), H5Fclose);
    Handle fileCreate = plist(H5Fget_create_plist(fileId.get()));
    size_t addressBytes = 8, lengthBytes = 8;
    if (!fileId.valid() || !fileCreate.valid() || H5Pget_sizes(fileCreate.get(), &addressBytes, &lengthBytes) < 0 ||
        addressBytes == 0 || addressBytes > 8 || lengthBytes == 0 || lengthBytes > 8)
        return Error{where + ": cannot read the file's address sizes: " + lastErrorMessage()};
    // Addresses count from the base address, which is the superblock's: RunReader only reads files
    // whose superblock is at byte 0 (no user block).
    FileBytes file(filePath);
    Checker check{file, addressBytes, lengthBytes, where, {}, 0};
    const size_t elementBytes = check.elementBytes();
    if (elements > file.size() / elementBytes + 1)
        return Error{where + " declares " + std::to_string(elements) + " strings, more than the file can hold"};

    Handle createList = plist(H5Dget_create_plist(dataset));
    std::vector<unsigned char> raw;
    switch (H5Pget_layout(createList.get())) {
    case H5D_CONTIGUOUS: {
        const haddr_t offset = H5Dget_offset(dataset);
        if (offset == HADDR_UNDEF)
            return Status::success(); // never written: every element is the fill value, an empty string
        if (!file.read(offset, size_t(elements * elementBytes), raw))
            return Error{where + ": its " + std::to_string(elements) + " strings lie past the end of the file; "
                         "the file is truncated or corrupted"};
        return check.elements(raw.data(), 0, elements);
    }
    case H5D_CHUNKED: {
        hsize_t chunkRows = 0;
        if (H5Pget_chunk(createList.get(), 1, &chunkRows) != 1 || chunkRows == 0)
            return Status::success(); // not 1-D: the caller refuses it
        const bool filtered = H5Pget_nfilters(createList.get()) > 0;
        const bool deflated = isDeflateOnly(createList.get());
        if (filtered && !deflated)
            return Status::success();
        // libhdf5 1.10 takes the dataset's own dataspace here, not H5S_ALL.
        Handle space = hdf5::space(H5Dget_space(dataset));
        hsize_t chunks = 0;
        if (H5Dget_num_chunks(dataset, space.get(), &chunks) < 0)
            return Error{where + ": cannot list its chunks: " + lastErrorMessage()};
        const uint64_t chunkBytes = uint64_t(chunkRows) * elementBytes;
        if (chunkRows > file.size() / elementBytes * 1032 + 1024)
            return Error{where + ": its chunks declare " + std::to_string(chunkRows) +
                         " strings each, more than the file can hold; the file is corrupted"};
        std::vector<unsigned char> inflated;
        for (hsize_t index = 0; index < chunks; ++index) {
            hsize_t first = 0;
            unsigned filterMask = 0;
            haddr_t address = HADDR_UNDEF;
            hsize_t stored = 0;
            if (H5Dget_chunk_info(dataset, space.get(), index, &first, &filterMask, &address, &stored) < 0)
                return Error{where + ": cannot read where chunk " + std::to_string(index) +
                             " lies: " + lastErrorMessage()};
            if (address == HADDR_UNDEF || first >= elements)
                continue;
            if (!file.read(address, size_t(stored), raw))
                return Error{where + ": chunk " + std::to_string(index) + " lies past the end of the file; "
                             "the file is truncated or corrupted"};
            const unsigned char* bytes = raw.data();
            uint64_t available = raw.size();
            if (deflated && (filterMask & 1u) == 0) {
                // deflate expands by at most about 1032:1, so a chunk that claims more is damaged.
                inflated.assign(size_t(std::min<uint64_t>(chunkBytes, uint64_t(stored) * 1032 + 64)), 0);
                uLongf produced = uLongf(inflated.size());
                if (uncompress(inflated.data(), &produced, raw.data(), uLong(raw.size())) != Z_OK)
                    return Error{where + ": chunk " + std::to_string(index) +
                                 " does not decompress; the file is corrupted"};
                bytes = inflated.data();
                available = produced;
            }
            const uint64_t count = std::min<uint64_t>({chunkRows, elements - first, available / elementBytes});
            if (Status s = check.elements(bytes, first, count); !s)
                return s;
        }
        return Status::success();
    }
    default:
        return Status::success();
    }
}

} // namespace nanscope::hdf5
