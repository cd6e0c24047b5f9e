// A reader in its own process, for the tests that look at a run while a writer in the test's own
// process holds it open (libhdf5 refuses a second open of a file in the process that has it open
// for writing). Prints what a follower of the run sees, one fact per line:
//     swmr 1                      opened for SWMR reading (the writer still has it open)
//     rows TABLE N                the row count of each table
//     last TABLE DATASET VALUE    the last value of each scalar series
//     event KIND                  each event's kind, in order
#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"

#include <cstdio>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: nanscope_test_reader RUN_DIR\n");
        return 2;
    }
    namespace rf = nanscope::runformat;
    auto reader = nanscope::RunReader::open(argv[1]);
    if (!reader) {
        std::fprintf(stderr, "%s\n", reader.error().c_str());
        return 1;
    }
    std::printf("swmr %d\n", (*reader)->info().openedForSwmr ? 1 : 0);
    for (const char* table : {rf::kScalars, rf::kLayers, rf::kBuffers, rf::kInputs, rf::kActivations, rf::kEvents})
        if (const nanscope::TableInfo* info = (*reader)->table(table))
            std::printf("rows %s %lld\n", table, static_cast<long long>(info->rows));
    if (const nanscope::TableInfo* scalars = (*reader)->table(rf::kScalars))
        for (const std::string& name : scalars->datasets)
            if (auto series = (*reader)->readSeries(rf::kScalars, name); series && !series->empty())
                std::printf("last %s %s %.17g\n", rf::kScalars, name.c_str(), series->back());
    if ((*reader)->table(rf::kEvents))
        if (auto kinds = (*reader)->readStrings(rf::kEvents, "kind"))
            for (const std::string& kind : *kinds)
                std::printf("event %s\n", kind.c_str());
    return 0;
}
