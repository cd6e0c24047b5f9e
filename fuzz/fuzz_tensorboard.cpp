// libFuzzer harness: readTensorBoardEvents on an event file made from the input, in one of two ways
// chosen by the input's first byte:
//   even  the rest is the file itself, framing and CRCs included: lengths that lie, bad CRCs, a
//         record cut off by the end of the file;
//   odd   the rest is record payloads separated by kRecordSeparator, each framed here with valid
//         CRCs: a mutated payload would otherwise almost never pass its CRC, and the Event decoder
//         (protobuf, then scalars, tensors, histograms) would go unexplored.
// make_seeds.py writes seeds of both kinds from the real event files and from generated ones.

#include "FuzzSupport.h"
#include "core/importers/Crc32c.h"
#include "core/importers/TensorBoardReader.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <string_view>

namespace {

constexpr std::string_view kRecordSeparator = "\xF7TFRECORD\xF7"; // make_seeds.py writes the same

void appendLittleEndian(std::string& out, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
}

std::string framedRecords(std::string_view payloads)
{
    std::string file;
    for (size_t start = 0; start <= payloads.size();) {
        const size_t end = std::min(payloads.find(kRecordSeparator, start), payloads.size());
        const std::string_view data = payloads.substr(start, end - start);
        std::string length;
        appendLittleEndian(length, data.size(), 8);
        file += length;
        appendLittleEndian(file, nanscope::maskCrc32c(nanscope::crc32c(length.data(), 8)), 4);
        file += data;
        appendLittleEndian(file, nanscope::maskCrc32c(nanscope::crc32c(data.data(), data.size())), 4);
        start = end + kRecordSeparator.size();
    }
    return file;
}

} // namespace

// libprotobuf logs an error for each string field that is not UTF-8 (the parse then fails, which
// the reader reports as a record that is no Event); thousands of them a second would bury the
// fuzzer's own output.
extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    if (size == 0)
        return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::string file = (data[0] & 1) ? framedRecords(rest) : std::string(rest);
    const std::string path = fuzz::writeInput("events.out.tfevents.1700000000.fuzz.1.0",
                                              reinterpret_cast<const uint8_t*>(file.data()), file.size());
    isTensorBoardEventFile(path);
    readTensorBoardEvents(path);
    return 0;
}
