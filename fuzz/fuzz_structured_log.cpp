// libFuzzer harness: the readers that find a log's structure (issue 49), each on the input as a
// file, whatever its sniffer says: text records (any `name value` syntax, progress bars, printed
// tables), JSON lines, delimited tables, a JSON document of columns. The seeds are the heads of
// the real logs of tests/data/logs (make_seeds.py).

#include "FuzzSupport.h"
#include "core/importers/DelimitedTableReader.h"
#include "core/importers/JsonColumnsLogReader.h"
#include "core/importers/JsonLinesLogReader.h"
#include "core/importers/TextRecordLogReader.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    const std::string path = fuzz::writeInput("training.log", data, size);
    FilePrefix prefix;
    prefix.path = path;
    prefix.name = "training.log";
    prefix.extension = ".log";
    prefix.size = size;
    prefix.head.assign(reinterpret_cast<const char*>(data), std::min(size, kSniffBytes));
    sniffTextRecordLog(prefix);
    sniffJsonLinesLog(prefix);
    sniffDelimitedTable(prefix);
    sniffJsonColumnsLog(prefix);
    readTextRecordLog(path);
    readJsonLinesLog(path);
    readDelimitedTable(path);
    readJsonColumnsLog(path);
    return 0;
}
