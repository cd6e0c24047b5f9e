#pragma once

// W&B's binary run file, `run-<id>.wandb`: every W&B run since SDK 0.10 writes one, online or
// offline, and for most W&B users it is the only per-step history on disk. Read natively: no SDK,
// no Python, no network. Its framing (W&B's wandb/sdk/internal/datastore.py and
// core/pkg/leveldb/, tests/source/WandbRecordReaderTest.cpp cites the lines):
//
// - a 7-byte header: ":W&B", the uint16 0xBEE1 (little-endian), the version byte 0;
// - then LevelDB's log format: 32 KiB blocks counted from the start of the file (the header sits
//   in block 0; wandb-core before 0.17.6 counted them from after it, which is read too), each
//   holding fragments of records: a uint32 checksum, a uint16 length, a type byte (1 FULL,
//   2 FIRST, 3 MIDDLE, 4 LAST), then the data; fewer than 7 bytes left in a block are padding;
// - the checksum is zlib's CRC-32 of the type byte and the data, not masked (one W&B docstring
//   says CRC-32C; the code computes CRC-32);
// - each record is a protocol-buffer `wandb_internal.Record` (wandb_records.proto holds the part
//   read here).
//
// Read: every `history` record's items (key, or nested keys joined with '/'; the value is JSON,
// NaN and Infinity included) at its `_step`, with `_timestamp` as the wall time; the run's
// config (attributes `config.<key>`), id, project and name, and its exit code. A fragment whose
// checksum fails, a record that does not parse or a file cut mid-record is a warning naming the
// record and its byte; the blocks after a damaged one are still read. The file is read a block at
// a time: memory holds one block and the record being assembled (at most 64 MiB), not the file.

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/ScalarLog.h"

#include <string>
#include <string_view>

namespace nanscope {

SniffVerdict sniffWandbRecords(const FilePrefix& file);
Result<ScalarLog> readWandbRecords(const std::string& path);
// The same on bytes in memory (tests, the fuzz harness); `path` names them in messages.
Result<ScalarLog> readWandbRecordBytes(const std::string& path, std::string_view bytes);

} // namespace nanscope
