#pragma once

// Builds torch.save-shaped zip archives and pickles byte by byte, so the reader's tests can make
// exactly the broken or hostile files they need without committing binaries.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace nanscope::test {

inline void putLe(std::string& out, uint64_t value, int bytes)
{
    for (int k = 0; k < bytes; ++k)
        out += char((value >> (8 * k)) & 0xff);
}

// CRC-32 (IEEE 802.3, as zip uses it), bit by bit: slow, and independent of the reader's zlib.
inline uint32_t crc32Of(const std::string& data)
{
    uint32_t crc = 0xffffffffu;
    for (unsigned char c : data) {
        crc ^= c;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

struct ZipEntrySpec
{
    std::string name;
    std::string data;
    uint16_t method = 0; // 0 stored; 8 claims deflate
    bool recordCrc = true; // false: CRC-32 field 0, as torch.save writes with its CRC option off
};

inline std::string makeZip(const std::vector<ZipEntrySpec>& entries)
{
    std::string out, directory;
    for (const auto& e : entries) {
        const uint64_t offset = out.size();
        putLe(out, 0x04034b50, 4);
        putLe(out, 20, 2);
        putLe(out, 0, 2);
        putLe(out, e.method, 2);
        putLe(out, 0, 4); // time, date
        putLe(out, e.recordCrc ? crc32Of(e.data) : 0, 4);
        putLe(out, e.data.size(), 4);
        putLe(out, e.data.size(), 4);
        putLe(out, e.name.size(), 2);
        putLe(out, 0, 2);
        out += e.name;
        out += e.data;

        putLe(directory, 0x02014b50, 4);
        putLe(directory, 20, 2);
        putLe(directory, 20, 2);
        putLe(directory, 0, 2);
        putLe(directory, e.method, 2);
        putLe(directory, 0, 4); // time, date
        putLe(directory, e.recordCrc ? crc32Of(e.data) : 0, 4);
        putLe(directory, e.data.size(), 4);
        putLe(directory, e.data.size(), 4);
        putLe(directory, e.name.size(), 2);
        putLe(directory, 0, 2);
        putLe(directory, 0, 2);
        putLe(directory, 0, 2);
        putLe(directory, 0, 2);
        putLe(directory, 0, 4);
        putLe(directory, offset, 4);
        directory += e.name;
    }
    const uint64_t directoryOffset = out.size();
    out += directory;
    putLe(out, 0x06054b50, 4);
    putLe(out, 0, 2);
    putLe(out, 0, 2);
    putLe(out, entries.size(), 2);
    putLe(out, entries.size(), 2);
    putLe(out, directory.size(), 4);
    putLe(out, directoryOffset, 4);
    putLe(out, 0, 2);
    return out;
}

class PickleWriter
{
public:
    PickleWriter() { m_bytes += "\x80\x02"; }
    PickleWriter& op(char c)
    {
        m_bytes += c;
        return *this;
    }
    PickleWriter& global(const std::string& module, const std::string& name)
    {
        m_bytes += 'c' + module + '\n' + name + '\n';
        return *this;
    }
    PickleWriter& text(const std::string& s)
    {
        m_bytes += 'X';
        putLe(m_bytes, s.size(), 4);
        m_bytes += s;
        return *this;
    }
    PickleWriter& integer(int64_t v)
    {
        m_bytes += char(0x8a);
        m_bytes += char(8);
        putLe(m_bytes, uint64_t(v), 8);
        return *this;
    }
    PickleWriter& mark() { return op('('); }
    PickleWriter& tuple() { return op('t'); }
    PickleWriter& emptyOrderedDict() { return global("collections", "OrderedDict").op(')').op('R'); }

    // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False, OrderedDict())
    PickleWriter& tensor(const std::string& storageType, const std::string& key, int64_t storageNumel, int64_t offset,
                         const std::vector<int64_t>& size, const std::vector<int64_t>& stride)
    {
        global("torch._utils", "_rebuild_tensor_v2").mark();
        mark().text("storage").global("torch", storageType).text(key).text("cpu").integer(storageNumel).tuple().op('Q');
        integer(offset);
        mark();
        for (int64_t s : size)
            integer(s);
        tuple().mark();
        for (int64_t s : stride)
            integer(s);
        tuple().op(char(0x89)).emptyOrderedDict().tuple().op('R');
        return *this;
    }
    std::string finish()
    {
        m_bytes += '.';
        return m_bytes;
    }

private:
    std::string m_bytes;
};

template<typename T>
std::string rawBytes(const std::vector<T>& values)
{
    std::string s(values.size() * sizeof(T), '\0');
    std::memcpy(s.data(), values.data(), s.size());
    return s;
}

inline void writeFile(const std::string& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

} // namespace nanscope::test
