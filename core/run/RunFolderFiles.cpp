#include "core/run/RunFolderFiles.h"

#include "core/run/RunFormat.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;

bool isMarkedOpenForWriting(const std::string& logPath)
{
    // HDF5 file format specification, superblock versions 2 and 3: signature (8 bytes), version,
    // size of offsets, size of lengths, then the file consistency flags; bit 0: opened for write
    // access, bit 2: opened for SWMR writing. The library clears them when the writer closes.
    std::ifstream in(logPath, std::ios::binary);
    unsigned char head[12] = {};
    in.read(reinterpret_cast<char*>(head), sizeof head);
    if (in.gcount() != std::streamsize(sizeof head) || (head[8] != 2 && head[8] != 3))
        return false;
    return (head[11] & 0x05) != 0;
}

std::map<int64_t, std::string> listSteppedFiles(const std::string& directory)
{
    std::map<int64_t, std::string> files;
    std::error_code ec;
    if (!fs::is_directory(directory, ec))
        return files;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        const auto name = rf::parseStepFileName(entry.path().filename().string());
        if (!name || !rf::isCheckpointExtension(name->extension) || !entry.is_regular_file(ec))
            continue;
        // A TorchScript/.pt checkpoint wins over a .safetensors one of the same step: it can replay.
        auto it = files.find(name->step);
        if (it == files.end() || rf::isTorchCheckpointExtension(name->extension))
            files[name->step] = entry.path().string();
    }
    return files;
}

} // namespace nanscope
