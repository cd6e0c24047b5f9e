#pragma once

// A read-only zip central-directory reader for the archives torch.save and torch.jit.save write.
// They store every entry uncompressed (STORED), so reading an entry is a bounded copy of bytes that
// lie in the file; compressed entries are listed but refused when read. Every offset and size is
// checked against the file's size before anything is allocated, and every entry read is checked
// against the CRC-32 the archive records for it (unless it records none: 0), so flipped bytes
// inside a tensor are an error rather than silently wrong statistics.

#include "core/Result.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nanscope {

// Success for a regular file; an error naming the path for anything else. A FIFO named like a
// checkpoint blocks the first read forever; a directory or a device is no archive either.
Status requireRegularFile(const std::string& path);

class ZipArchive
{
public:
    struct Entry
    {
        std::string name;
        uint16_t method = 0; // 0: stored, 8: deflate
        uint16_t flags = 0;
        uint64_t compressedSize = 0;
        uint64_t size = 0;
        uint64_t localHeaderOffset = 0;
        uint32_t crc32 = 0;
    };

    static Result<ZipArchive> open(const std::string& path);

    const std::string& path() const { return m_path; }
    uint64_t fileSize() const { return m_fileSize; }
    const std::vector<Entry>& entries() const { return m_entries; }
    const Entry* find(const std::string& name) const;

    // The bytes of a stored entry. Fails, naming the archive and the entry, for compressed or
    // encrypted entries, for entries whose data would lie outside the file, and for entries whose
    // bytes do not match their CRC-32.
    Result<std::vector<uint8_t>> read(const Entry& entry) const;
    Result<std::vector<uint8_t>> read(const std::string& name) const;
    // Reads every stored entry once and checks it against its CRC-32, keeping nothing: for a
    // consumer (torch::jit::load) that would read the archive without checking.
    Status verifyChecksums() const;

private:
    Status readCentralDirectory();
    Status readAt(uint64_t offset, void* buffer, uint64_t size) const;
    Error error(const std::string& what) const;

    std::string m_path;
    uint64_t m_fileSize = 0;
    std::vector<Entry> m_entries;
    std::map<std::string, size_t> m_index;
};

} // namespace nanscope
