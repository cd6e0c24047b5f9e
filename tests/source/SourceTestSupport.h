#pragma once

// What the foreign-log reader tests share: the real logs in place, a scratch folder for files the
// tests write, and a look-up of one point.

#include "core/importers/ScalarLog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

namespace nanscope::testing {

inline std::string realLog(const std::string& relative)
{
    return std::string(NANSCOPE_REAL_LOGS) + "/" + relative;
}

// The real logs live outside the repository; a checkout without them skips these tests, saying why.
#define NANSCOPE_REQUIRE_REAL_LOG(path)                                                                                \
    do {                                                                                                               \
        if (!std::filesystem::exists(path))                                                                            \
            GTEST_SKIP() << "real log not found: " << (path) << " (set NANSCOPE_REAL_LOGS to the real-logs folder)";   \
    } while (false)

class ScratchFolder {
public:
    ScratchFolder()
    {
        static std::atomic<int> counter { 0 };
        m_path = std::filesystem::temp_directory_path()
            / ("nanscope-source-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~ScratchFolder()
    {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;

    std::string write(const std::string& name, const std::string& bytes) const
    {
        const std::filesystem::path file = m_path / name;
        std::ofstream(file, std::ios::binary) << bytes;
        return file.string();
    }
    std::string path() const { return m_path.string(); }

private:
    std::filesystem::path m_path;
};

inline std::string readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The first point of `name` at `step`, or null.
inline const ScalarPoint* pointAt(const ScalarLog& log, const std::string& name, int64_t step)
{
    const auto series = log.series.find(name);
    if (series == log.series.end())
        return nullptr;
    for (const ScalarPoint& point : series->second)
        if (point.step == step)
            return &point;
    return nullptr;
}

// The value of `name` at `step`; a missing point fails the test (and reads as NaN, which no
// comparison accepts, so a check on it cannot pass by accident).
inline double valueAt(const ScalarLog& log, const std::string& name, int64_t step)
{
    const ScalarPoint* point = pointAt(log, name, step);
    if (!point) {
        ADD_FAILURE() << "no point of \"" << name << "\" at step " << step;
        return std::numeric_limits<double>::quiet_NaN();
    }
    return point->value;
}

inline size_t pointCount(const ScalarLog& log, const std::string& name)
{
    const auto series = log.series.find(name);
    return series == log.series.end() ? 0 : series->second.size();
}

inline bool anyContains(const std::vector<std::string>& texts, const std::string& part)
{
    for (const std::string& text : texts)
        if (text.find(part) != std::string::npos)
            return true;
    return false;
}

} // namespace nanscope::testing
