#pragma once

// What the harnesses share: the readers under test take paths, so each input is written to a file
// in a private temporary directory (on /dev/shm when it exists, to keep the disk out of the loop).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace nanscope::fuzz {

inline const std::string& scratchDirectory()
{
    static const std::string directory = [] {
        std::string pattern = (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + std::string("/nanscope-fuzz-XXXXXX");
        if (!mkdtemp(pattern.data()))
            std::abort();
        return pattern;
    }();
    return directory;
}

inline std::string writeInput(const std::string& name, const uint8_t* data, size_t size)
{
    const std::string path = scratchDirectory() + "/" + name;
    FILE* file = std::fopen(path.c_str(), "wb");
    if (!file || (size && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0)
        std::abort();
    return path;
}

} // namespace nanscope::fuzz
