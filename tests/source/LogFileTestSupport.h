#pragma once

// The event-file and text-log reader tests' words for what SourceTestSupport.h provides: a real-log
// folder or a skip, a scratch folder for damaged copies, and file helpers.

#include "SourceTestSupport.h"

#include <filesystem>
#include <fstream>
#include <string>

namespace nanscope::test {

using ::nanscope::testing::readBytes;

// The real-log folder `name` (../shared/real-logs/NAME), or "" when this checkout lacks it.
inline std::string realLogFolder(const std::string& name)
{
    const std::string folder = ::nanscope::testing::realLog(name);
    return std::filesystem::is_directory(folder) ? folder : std::string();
}

#define NANSCOPE_REAL_LOG_OR_SKIP(variable, name)                                                                      \
    const std::string variable = ::nanscope::test::realLogFolder(name);                                                \
    if (variable.empty())                                                                                              \
        GTEST_SKIP() << "real log folder " << NANSCOPE_REAL_LOGS << "/" << name << " not present";

// The first file in folder whose name contains `part`.
inline std::string fileIn(const std::string& folder, const std::string& part)
{
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        if (entry.path().filename().string().find(part) != std::string::npos)
            return entry.path().string();
    return {};
}

inline void writeBytes(const std::string& path, const std::string& bytes)
{
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), std::streamsize(bytes.size()));
}

// A scratch folder addressed by file name.
class TempFolder : public ::nanscope::testing::ScratchFolder
{
public:
    std::string file(const std::string& name) const { return (std::filesystem::path(path()) / name).string(); }
    bool ok() const { return std::filesystem::is_directory(path()); }
};

} // namespace nanscope::test
