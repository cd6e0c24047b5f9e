#pragma once

// Shared by the TensorBoard reader tests: a minimal protobuf and TFRecord writer (independent of
// the reader's .proto, so a wrong field number there fails a test), and small queries.

#include "core/importers/Crc32c.h"
#include "core/importers/ScalarLog.h"
#include "core/importers/TfRecordReader.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace nanscope::test {

inline size_t totalPoints(const ScalarLog& log)
{
    size_t total = 0;
    for (const auto& [tag, points] : log.series)
        total += points.size();
    return total;
}

inline bool hasNote(const ScalarLog& log, const std::string& text)
{
    for (const std::string& note : log.notes)
        if (note == text)
            return true;
    return false;
}

struct RecordSpan {
    uint64_t number, offset, size; // size: header + data + footer
};

inline std::vector<RecordSpan> recordsOf(const std::string& path)
{
    std::vector<RecordSpan> spans;
    readTfRecords(path, [&](uint64_t number, uint64_t offset, std::string_view data) {
        spans.push_back({ number, offset, 16 + data.size() });
    });
    return spans;
}

struct Proto {
    std::string bytes;

    void putVarint(uint64_t value)
    {
        for (; value >= 0x80; value >>= 7)
            bytes.push_back(char((value & 0x7F) | 0x80));
        bytes.push_back(char(value));
    }
    Proto& varint(int field, uint64_t value)
    {
        putVarint(uint64_t(field) << 3 | 0);
        putVarint(value);
        return *this;
    }
    Proto& float64(int field, double value)
    {
        putVarint(uint64_t(field) << 3 | 1);
        bytes.append(reinterpret_cast<const char*>(&value), 8);
        return *this;
    }
    Proto& float32(int field, float value)
    {
        putVarint(uint64_t(field) << 3 | 5);
        bytes.append(reinterpret_cast<const char*>(&value), 4);
        return *this;
    }
    Proto& blob(int field, const std::string& value)
    {
        putVarint(uint64_t(field) << 3 | 2);
        putVarint(value.size());
        bytes += value;
        return *this;
    }
    Proto& message(int field, const Proto& value) { return blob(field, value.bytes); }
    Proto& packedDoubles(int field, const std::vector<double>& values)
    {
        return blob(field, std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
    }
};

inline std::string littleEndian(uint64_t value, int bytes)
{
    std::string out;
    for (int i = 0; i < bytes; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
    return out;
}

inline std::string tfRecord(const std::string& data)
{
    const std::string length = littleEndian(data.size(), 8);
    return length + littleEndian(maskCrc32c(crc32c(length.data(), 8)), 4) + data
        + littleEndian(maskCrc32c(crc32c(data.data(), data.size())), 4);
}

// Event{wall_time=1, step=2, summary=5{value=1{...}}}
inline std::string summaryEvent(int64_t step, const Proto& value)
{
    return tfRecord(Proto()
                        .float64(1, 1700000000.0 + double(step))
                        .varint(2, uint64_t(step))
                        .message(5, Proto().message(1, value))
                        .bytes);
}

inline Proto pluginMetadata(const std::string& plugin)
{
    return Proto().message(1, Proto().blob(1, plugin)); // SummaryMetadata.plugin_data.plugin_name
}

inline Proto shape(std::initializer_list<int64_t> dims)
{
    Proto shape;
    for (int64_t dim : dims)
        shape.message(2, Proto().varint(1, uint64_t(dim)));
    return shape;
}

} // namespace nanscope::test
