#pragma once

// Shared by the core tests: scratch folders and hand-made run files.

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

namespace nanscope::test {

// A fresh folder under the system temp dir, removed when the test ends.
class ScratchDir
{
public:
    ScratchDir()
    {
        std::random_device rd;
        m_path = std::filesystem::temp_directory_path() /
                 ("nanscope-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
        std::filesystem::create_directories(m_path);
    }
    ~ScratchDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    std::string path() const { return m_path.string(); }
    std::string operator/(const std::string& name) const { return (m_path / name).string(); }

private:
    std::filesystem::path m_path;
};

inline std::string demoRun(const std::string& name)
{
    return (std::filesystem::path(NANSCOPE_TEST_RUNS) / name).string();
}

} // namespace nanscope::test
