#include "core/checkpoint/ZipArchive.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include <sys/stat.h>

#include <zlib.h>

namespace nanscope {

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectorySignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint64_t kEndRecordSize = 22;
constexpr uint64_t kMaxCommentSize = 0xffff;

uint16_t le16(const uint8_t* p)
{
    return uint16_t(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t* p)
{
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t le64(const uint8_t* p)
{
    return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32);
}

struct FileCloser
{
    void operator()(FILE* f) const
    {
        if (f)
            std::fclose(f);
    }
};

} // namespace

Status requireRegularFile(const std::string& path)
{
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
        return Error{path + ": cannot open: " + std::strerror(errno)};
    if (S_ISREG(info.st_mode))
        return Status::success();
    const char* kind = S_ISDIR(info.st_mode)    ? "a directory"
                       : S_ISFIFO(info.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(info.st_mode)  ? "a character device"
                       : S_ISBLK(info.st_mode)  ? "a block device"
                       : S_ISSOCK(info.st_mode) ? "a socket"
                                                : "a special file";
    return Error{path + ": " + kind + ", not a regular file; checkpoints and batches are read only from regular files"};
}

Error ZipArchive::error(const std::string& what) const
{
    return Error{m_path + ": " + what};
}

Status ZipArchive::readAt(uint64_t offset, void* buffer, uint64_t size) const
{
    if (offset > m_fileSize || size > m_fileSize - offset)
        return error("truncated zip archive (needs bytes " + std::to_string(offset) + ".." + std::to_string(offset + size)
                     + " of a " + std::to_string(m_fileSize) + "-byte file)");
    std::unique_ptr<FILE, FileCloser> file(std::fopen(m_path.c_str(), "rb"));
    if (!file)
        return error("cannot open: " + std::string(std::strerror(errno)));
    if (fseeko(file.get(), off_t(offset), SEEK_SET) != 0 || std::fread(buffer, 1, size, file.get()) != size)
        return error("read error at offset " + std::to_string(offset));
    return Status::success();
}

Result<ZipArchive> ZipArchive::open(const std::string& path)
{
    if (Status regular = requireRegularFile(path); !regular)
        return Error{regular.error()};
    ZipArchive archive;
    archive.m_path = path;
    std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
    if (!file)
        return Error{path + ": cannot open: " + std::strerror(errno)};
    if (fseeko(file.get(), 0, SEEK_END) != 0)
        return Error{path + ": cannot seek"};
    const off_t end = ftello(file.get());
    if (end < 0)
        return Error{path + ": cannot tell the file's size"};
    archive.m_fileSize = uint64_t(end);
    file.reset();
    if (auto status = archive.readCentralDirectory(); !status)
        return Error{status.error()};
    return archive;
}

Status ZipArchive::readCentralDirectory()
{
    if (m_fileSize < kEndRecordSize)
        return error("not a zip archive, or truncated: " + std::to_string(m_fileSize) + " bytes");

    // The end-of-central-directory record sits in the last 22 + comment bytes.
    const uint64_t tailSize = std::min<uint64_t>(m_fileSize, kEndRecordSize + kMaxCommentSize);
    std::vector<uint8_t> tail(tailSize);
    if (auto s = readAt(m_fileSize - tailSize, tail.data(), tailSize); !s)
        return s;
    int64_t endRecord = -1;
    for (int64_t i = int64_t(tailSize - kEndRecordSize); i >= 0; --i) {
        if (le32(&tail[size_t(i)]) == kEndOfCentralDirectorySignature) {
            endRecord = i;
            break;
        }
    }
    if (endRecord < 0)
        return error("not a zip archive, or truncated: no end-of-central-directory record");
    const uint8_t* eocd = &tail[size_t(endRecord)];
    uint64_t entryCount = le16(eocd + 10);
    uint64_t directorySize = le32(eocd + 12);
    uint64_t directoryOffset = le32(eocd + 16);
    const uint64_t eocdOffset = m_fileSize - tailSize + uint64_t(endRecord);

    if (entryCount == 0xffff || directorySize == 0xffffffff || directoryOffset == 0xffffffff) {
        // Zip64: a locator just before the end record points at the zip64 end record.
        if (eocdOffset < 20)
            return error("corrupt zip64 archive: no zip64 locator");
        uint8_t locator[20];
        if (auto s = readAt(eocdOffset - 20, locator, 20); !s)
            return s;
        if (le32(locator) != kZip64LocatorSignature)
            return error("corrupt zip64 archive: no zip64 locator");
        const uint64_t zip64EndOffset = le64(locator + 8);
        uint8_t zip64End[56];
        if (auto s = readAt(zip64EndOffset, zip64End, 56); !s)
            return s;
        if (le32(zip64End) != kZip64EndSignature)
            return error("corrupt zip64 archive: bad zip64 end record");
        entryCount = le64(zip64End + 32);
        directorySize = le64(zip64End + 40);
        directoryOffset = le64(zip64End + 48);
    }
    if (directoryOffset > m_fileSize || directorySize > m_fileSize - directoryOffset)
        return error("truncated or corrupt zip archive: the central directory lies outside the file");
    if (entryCount > directorySize / 46)
        return error("corrupt zip archive: " + std::to_string(entryCount) + " entries cannot fit a "
                     + std::to_string(directorySize) + "-byte central directory");

    std::vector<uint8_t> directory(directorySize);
    if (auto s = readAt(directoryOffset, directory.data(), directorySize); !s)
        return s;
    size_t pos = 0;
    m_entries.reserve(entryCount);
    for (uint64_t i = 0; i < entryCount; ++i) {
        if (directorySize - pos < 46 || le32(&directory[pos]) != kCentralHeaderSignature)
            return error("corrupt zip archive: bad central directory entry " + std::to_string(i));
        const uint8_t* h = &directory[pos];
        Entry entry;
        entry.flags = le16(h + 8);
        entry.method = le16(h + 10);
        entry.crc32 = le32(h + 16);
        entry.compressedSize = le32(h + 20);
        entry.size = le32(h + 24);
        const size_t nameLength = le16(h + 28);
        const size_t extraLength = le16(h + 30);
        const size_t commentLength = le16(h + 32);
        entry.localHeaderOffset = le32(h + 42);
        if (directorySize - pos - 46 < nameLength + extraLength + commentLength)
            return error("corrupt zip archive: central directory entry " + std::to_string(i) + " runs past its end");
        entry.name.assign(reinterpret_cast<const char*>(h + 46), nameLength);

        // Zip64 extended information replaces the fields that hold 0xffffffff, in this order.
        const uint8_t* extra = h + 46 + nameLength;
        for (size_t e = 0; e + 4 <= extraLength;) {
            const uint16_t id = le16(extra + e);
            const uint16_t length = le16(extra + e + 2);
            if (e + 4 + length > extraLength)
                break;
            if (id == 0x0001) {
                const uint8_t* field = extra + e + 4;
                size_t left = length;
                auto take = [&](uint64_t& value) {
                    if (value == 0xffffffff && left >= 8) {
                        value = le64(field);
                        field += 8;
                        left -= 8;
                    }
                };
                take(entry.size);
                take(entry.compressedSize);
                take(entry.localHeaderOffset);
            }
            e += 4 + length;
        }
        pos += 46 + nameLength + extraLength + commentLength;
        m_index[entry.name] = m_entries.size();
        m_entries.push_back(std::move(entry));
    }
    return Status::success();
}

const ZipArchive::Entry* ZipArchive::find(const std::string& name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_entries[it->second];
}

Result<std::vector<uint8_t>> ZipArchive::read(const std::string& name) const
{
    const Entry* entry = find(name);
    if (!entry)
        return error("the archive has no entry '" + name + "'");
    return read(*entry);
}

Result<std::vector<uint8_t>> ZipArchive::read(const Entry& entry) const
{
    if (entry.flags & 1)
        return error("entry '" + entry.name + "' is encrypted");
    if (entry.method != 0)
        return error("entry '" + entry.name + "' is compressed (zip method " + std::to_string(entry.method)
                     + "); torch.save stores tensor data uncompressed, so the archive was re-packed by another tool. "
                       "Unzip and re-zip it with 'zip -0' or re-save it with torch.save");
    if (entry.compressedSize != entry.size)
        return error("corrupt zip archive: stored entry '" + entry.name + "' has different sizes");
    uint8_t local[30];
    if (auto s = readAt(entry.localHeaderOffset, local, 30); !s)
        return Error{s.error()};
    if (le32(local) != kLocalHeaderSignature)
        return error("corrupt zip archive: bad local header for entry '" + entry.name + "'");
    const uint64_t dataOffset = entry.localHeaderOffset + 30 + le16(local + 26) + le16(local + 28);
    if (dataOffset > m_fileSize || entry.size > m_fileSize - dataOffset)
        return error("truncated zip archive: entry '" + entry.name + "' needs " + std::to_string(entry.size)
                     + " bytes at offset " + std::to_string(dataOffset) + " of a " + std::to_string(m_fileSize)
                     + "-byte file");
    std::unique_ptr<FILE, FileCloser> file(std::fopen(m_path.c_str(), "rb"));
    if (!file)
        return error("cannot open: " + std::string(std::strerror(errno)));
    if (fseeko(file.get(), off_t(dataOffset), SEEK_SET) != 0)
        return error("read error at offset " + std::to_string(dataOffset));
    // Read in slices, each checksummed while it is still in the cache.
    constexpr uint64_t kSlice = uint64_t(1) << 20;
    std::vector<uint8_t> bytes(entry.size);
    uLong crc = ::crc32(0L, Z_NULL, 0);
    for (uint64_t at = 0; at < entry.size; at += kSlice) {
        const uint64_t length = std::min(kSlice, entry.size - at);
        if (std::fread(bytes.data() + at, 1, length, file.get()) != length)
            return error("read error at offset " + std::to_string(dataOffset + at));
        crc = ::crc32(crc, bytes.data() + at, uInt(length));
    }
    // 0: no checksum recorded (torch.serialization.set_crc32_options(False) writes archives so).
    if (entry.crc32 != 0 && uint32_t(crc) != entry.crc32) {
        char detail[80];
        std::snprintf(detail, sizeof detail, " (CRC-32 %08x, the archive records %08x)", unsigned(crc),
                      unsigned(entry.crc32));
        return error("corrupt zip archive: the bytes of entry '" + entry.name + "' do not match their checksum"
                     + detail + "; the file was damaged after it was written");
    }
    return bytes;
}

Status ZipArchive::verifyChecksums() const
{
    for (const Entry& entry : m_entries) {
        if (entry.method != 0)
            continue; // torch writes none; a compressed entry is refused where it is read
        if (auto bytes = read(entry); !bytes)
            return Error{bytes.error()};
    }
    return Status::success();
}

} // namespace nanscope
