#include "core/importers/TfRecordReader.h"

#include "core/importers/Crc32c.h"

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
    std::string data;
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
        unsigned char header[kHeaderBytes];
        if (!file.read(reinterpret_cast<char*>(header), kHeaderBytes)) {
            stop("read error");
            break;
        }
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
        data.resize(size_t(length)); // at most the file's size: checked just above
        unsigned char footer[kFooterBytes];
        if (!file.read(data.data(), std::streamsize(length))
            || !file.read(reinterpret_cast<char*>(footer), kFooterBytes)) {
            stop("read error");
            break;
        }
        offset += kHeaderBytes + length + kFooterBytes;
        if (maskCrc32c(crc32c(data.data(), data.size())) != readLittleEndian32(footer)) {
            // The length was sound, so the next record is where it says: skip only this one.
            scan.warnings.push_back(where() + "CRC-32C of the data does not match; record skipped, reading went on");
            ++scan.recordsSkipped;
            continue;
        }
        ++scan.recordsRead;
        onRecord(number, recordOffset, data);
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
