#include "core/importers/TfRecordReader.h"

#include "core/importers/Crc32c.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace nanscope {

namespace {

constexpr uint64_t kHeaderBytes = 12; // length + its CRC
constexpr uint64_t kFooterBytes = 4; // the data CRC

uint64_t readLittleEndian64(const unsigned char* bytes)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
        value = (value << 8) | bytes[i];
    return value;
}

uint32_t readLittleEndian32(const unsigned char* bytes)
{
    return uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
}

// The file read in large blocks, each record taken from the buffer where it lies. Three stream
// reads per record (header, data, footer) were a sixth of reading a 300,000-record event file.
class BlockBuffer {
public:
    BlockBuffer(std::ifstream& file, uint64_t fileSize)
        : m_file(file)
        , m_blockBytes(size_t(std::min<uint64_t>(fileSize, kBlockBytes)))
    {
    }

    // Makes the next `count` bytes readable at data(); false when the file gives fewer. `count`
    // is at most what the file's size says is left, so the buffer never outgrows the file.
    bool ensure(size_t count)
    {
        if (m_end - m_begin >= count)
            return true;
        if (m_end > m_begin) // memmove of an empty buffer's null data is undefined even for 0 bytes
            std::memmove(m_bytes.data(), m_bytes.data() + m_begin, m_end - m_begin);
        m_end -= m_begin;
        m_begin = 0;
        if (m_bytes.size() < count)
            m_bytes.resize(std::max(count, m_blockBytes)); // no more than a small file holds
        while (m_end < count) {
            m_file.read(m_bytes.data() + m_end, std::streamsize(m_bytes.size() - m_end));
            const std::streamsize got = m_file.gcount();
            if (got <= 0)
                return false;
            m_end += size_t(got);
            if (!m_file)
                m_file.clear(); // a short read at the end of the file: what it gave is kept
        }
        return true;
    }
    const unsigned char* data() const { return reinterpret_cast<const unsigned char*>(m_bytes.data()) + m_begin; }
    void consume(size_t count) { m_begin += count; }

private:
    static constexpr size_t kBlockBytes = size_t(1) << 20;
    std::ifstream& m_file;
    const size_t m_blockBytes;
    std::vector<char> m_bytes;
    size_t m_begin = 0, m_end = 0;
};

std::string recordsKept(uint64_t count)
{
    return count == 1 ? "the 1 record before it is kept"
                      : "the " + std::to_string(count) + " records before it are kept";
}

} // namespace

Result<TfRecordScan> readTfRecords(const std::string& path, const TfRecordCallback& onRecord)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) // a FIFO or a device would block or never end
        return Error { path + (std::filesystem::exists(path, ec) ? ": not a regular file" : ": no such file") };
    std::ifstream file(path, std::ios::binary);
    if (!file)
        return Error { path + ": cannot open: " + std::strerror(errno) };
    file.seekg(0, std::ios::end);
    const std::streamoff end = file.tellg();
    file.seekg(0, std::ios::beg);
    if (end < 0 || !file)
        return Error { path + ": cannot read its size" };
    const uint64_t fileSize = uint64_t(end);

    TfRecordScan scan;
    BlockBuffer buffer(file, fileSize);
    uint64_t offset = 0;
    for (uint64_t number = 1; offset < fileSize; ++number) {
        // Made only for a warning: a good record (all but a few) needs no words.
        const uint64_t recordOffset = offset;
        auto where = [&] {
            return path + ": record " + std::to_string(number) + " (byte " + std::to_string(recordOffset) + "): ";
        };
        auto stop = [&](const std::string& why) {
            scan.warnings.push_back(where() + why + "; reading stopped, " + recordsKept(scan.recordsRead));
            scan.stoppedEarly = true;
        };
        const uint64_t remaining = fileSize - offset;
        if (remaining < kHeaderBytes) {
            stop("truncated: " + std::to_string(remaining) + " bytes of its 12-byte header");
            break;
        }
        if (!buffer.ensure(kHeaderBytes)) {
            stop("read error");
            break;
        }
        const unsigned char* header = buffer.data();
        if (maskCrc32c(crc32c(header, 8)) != readLittleEndian32(header + 8)) {
            // Without a trustworthy length there is no telling where the next record starts.
            stop("CRC-32C of the length field does not match");
            break;
        }
        const uint64_t length = readLittleEndian64(header);
        const uint64_t available = remaining - kHeaderBytes;
        if (available < kFooterBytes || length > available - kFooterBytes) {
            stop("truncated: the record claims " + std::to_string(length) + " bytes of data but "
                + std::to_string(available) + " bytes remain in the file");
            break;
        }
        // At most the file's size: checked just above.
        const size_t recordBytes = size_t(kHeaderBytes + length + kFooterBytes);
        if (!buffer.ensure(recordBytes)) {
            stop("read error");
            break;
        }
        const unsigned char* data = buffer.data() + kHeaderBytes;
        const uint32_t dataCrc = readLittleEndian32(data + length);
        offset += recordBytes;
        if (maskCrc32c(crc32c(data, size_t(length))) != dataCrc) {
            buffer.consume(recordBytes);
            // The length was sound, so the next record is where it says: skip only this one.
            scan.warnings.push_back(where() + "CRC-32C of the data does not match; record skipped, reading went on");
            ++scan.recordsSkipped;
            continue;
        }
        ++scan.recordsRead;
        onRecord(number, recordOffset, std::string_view(reinterpret_cast<const char*>(data), size_t(length)));
        buffer.consume(recordBytes);
    }
    return scan;
}

bool startsWithTfRecord(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return false;
    std::ifstream file(path, std::ios::binary);
    unsigned char header[kHeaderBytes];
    if (!file || !file.read(reinterpret_cast<char*>(header), kHeaderBytes))
        return false;
    return maskCrc32c(crc32c(header, 8)) == readLittleEndian32(header + 8);
}

} // namespace nanscope
