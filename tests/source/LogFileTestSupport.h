#pragma once

// Shared by the event-file and text-log reader tests: the real logs in place, temporary folders for damaged
// copies, and small file helpers.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace nanscope::test {

// The real-log folder `name` (../shared/real-logs/NAME), or "" when this checkout lacks it.
inline std::string realLogFolder(const std::string& name)
{
    const std::filesystem::path folder = std::filesystem::path(NANSCOPE_REAL_LOGS) / name;
    return std::filesystem::is_directory(folder) ? folder.string() : std::string();
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

inline std::string readBytes(const std::string& path)
{
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

inline void writeBytes(const std::string& path, const std::string& bytes)
{
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), std::streamsize(bytes.size()));
}

// A fresh folder under the system temp directory, removed with everything in it at the end.
class TempFolder {
public:
    TempFolder()
    {
        std::string pattern = (std::filesystem::temp_directory_path() / "nanscope-source-test-XXXXXX").string();
        if (mkdtemp(pattern.data()))
            m_path = pattern;
    }
    ~TempFolder()
    {
        std::error_code ec;
        if (!m_path.empty())
            std::filesystem::remove_all(m_path, ec);
    }
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;

    std::string file(const std::string& name) const { return (std::filesystem::path(m_path) / name).string(); }
    bool ok() const { return !m_path.empty(); }

private:
    std::string m_path;
};

} // namespace nanscope::test
