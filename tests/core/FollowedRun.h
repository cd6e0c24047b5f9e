#pragma once

// What a follower of a run sees while its writer, in this test's process, still holds run.h5
// open: read by tests/core/helpers/TestReaderMain.cpp in a process of its own, since libhdf5
// refuses a second open of a file in the process that has it open for writing.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace nanscope::test {

struct FollowedRun
{
    bool opened = false;
    std::string output; // everything the reader printed, for failure messages
    bool swmr = false;
    std::map<std::string, long long> rows;            // table -> row count
    std::map<std::string, double> lastScalar;         // scalar series -> its last value
    std::vector<std::string> eventKinds;
};

inline FollowedRun followRun(const std::string& runDirectory)
{
    FollowedRun run;
    const std::string command = std::string(NANSCOPE_TEST_READER) + " '" + runDirectory + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe)
        return run;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe))
        run.output += buffer;
    run.opened = ::pclose(pipe) == 0;
    std::istringstream lines(run.output);
    std::string word;
    while (lines >> word) {
        if (word == "swmr") {
            int flag = 0;
            lines >> flag;
            run.swmr = flag != 0;
        } else if (word == "rows") {
            std::string table;
            long long count = 0;
            lines >> table >> count;
            run.rows[table] = count;
        } else if (word == "last") {
            std::string table, name, value;
            lines >> table >> name >> value;
            run.lastScalar[name] = std::strtod(value.c_str(), nullptr); // istream reads no "nan"
        } else if (word == "event") {
            std::string kind;
            lines >> kind;
            run.eventKinds.push_back(kind);
        } else {
            std::getline(lines, word); // an error line: kept in `output`
        }
    }
    return run;
}

} // namespace nanscope::test
