// libFuzzer harness: RunReader::open on a run directory whose run.h5 is the input, then every table
// read the way the scan and the window read it (series, a column, a row, a block, strings). HDF5
// itself is not instrumented: a crash inside libhdf5 shows as a SEGV with HDF5 frames.

#include "FuzzSupport.h"
#include "core/run/RunReader.h"

#include <sys/stat.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    static const std::string runDirectory = [] {
        const std::string directory = fuzz::scratchDirectory() + "/run";
        mkdir(directory.c_str(), 0700);
        return directory;
    }();
    fuzz::writeInput("run/run.h5", data, size);
    // In this process, not behind the forked probe: the fuzzer must see what libhdf5 does with the
    // input (the probe would hide a crash in its child, and inherit the fuzzer's crash handler).
    auto reader = RunReader::openInThisProcess(runDirectory);
    if (!reader)
        return 0;
    const RunReader& run = **reader;
    for (const auto& table : run.info().tables) {
        run.steps(table.name);
        for (const auto& dataset : table.datasets) {
            if (table.names.empty()) {
                run.readSeries(table.name, dataset);
                run.readStrings(table.name, dataset);
            } else {
                run.readColumn(table.name, dataset, 0);
                run.readColumn(table.name, dataset, int64_t(table.names.size()) - 1);
                run.readRow(table.name, dataset, table.rows - 1);
                run.readBlock(table.name, dataset, 0, std::min<int64_t>(table.rows, 64));
            }
        }
    }
    return 0;
}
