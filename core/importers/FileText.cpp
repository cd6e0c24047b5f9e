#include "core/importers/FileText.h"

#include "core/HugePages.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace nanscope {

Result<std::string> readFileText(const std::string& path, uint64_t maxBytes)
{
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status))
        return Error { path + ": no such file" };
    if (fs::is_directory(status))
        return Error { path + ": is a folder, not a file" };
    if (!fs::is_regular_file(status))
        return Error { path + ": not a regular file" };
    const uintmax_t size = fs::file_size(path, error);
    if (error)
        return Error { path + ": cannot read its size: " + error.message() };
    if (size > maxBytes)
        return Error { path + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(maxBytes)
            + " bytes a log of this kind can plausibly hold" };

    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error { path + ": cannot be opened for reading" };
    std::string text;
    text.reserve(static_cast<size_t>(size));
    adviseHugePages(text.data(), static_cast<size_t>(size));
    text.resize(static_cast<size_t>(size));
    in.read(text.data(), static_cast<std::streamsize>(size));
    // A file that shrank while being read (a live run rewriting it) is read as far as it goes.
    text.resize(static_cast<size_t>(in.gcount()));
    if (in.bad())
        return Error { path + ": read failed" };
    return text;
}

} // namespace nanscope
