#pragma once

// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// Both CRCs are checked. A record is never allocated before its length is checked against what
// is left of the file, so a damaged length field is reported, not believed.

#include "core/Result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

struct TfRecordScan {
    uint64_t recordsRead = 0; // records whose two CRCs checked, handed to the callback
    uint64_t recordsSkipped = 0; // records dropped for a data CRC mismatch (reading went on)
    bool stoppedEarly = false; // a bad length CRC or a truncation ended the reading
    // "FILE: record 12 (byte 3456): ...": record numbers count from 1, bytes from 0.
    std::vector<std::string> warnings;
};

// Called for each good record: its number (from 1), the byte offset of its header, its data. The
// data lives in the reader's buffer until the callback returns.
using TfRecordCallback = std::function<void(uint64_t recordNumber, uint64_t offset, std::string_view data)>;

// Reads every record of path. An Error only when the file cannot be opened or read at all;
// damage is in the warnings, with everything before it handed over.
Result<TfRecordScan> readTfRecords(const std::string& path, const TfRecordCallback& onRecord);

// Whether path starts with a TFRecord header whose length CRC checks (reads 12 bytes).
bool startsWithTfRecord(const std::string& path);

} // namespace nanscope
