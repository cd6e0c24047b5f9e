#include "RunFormat.h"

#include <cstdio>
#include <cstring>

namespace nanscope::runformat {

std::string stepFileStem(int64_t step)
{
    char buffer[48];
    std::snprintf(buffer, sizeof buffer, "%s%0*lld", kStepFilePrefix, kStepFileDigits, static_cast<long long>(step));
    return buffer;
}

std::optional<StepFileName> parseStepFileName(const std::string& fileName)
{
    const size_t prefix = std::strlen(kStepFilePrefix);
    if (fileName.compare(0, prefix, kStepFilePrefix) != 0)
        return std::nullopt;
    size_t at = prefix;
    int64_t step = 0;
    while (at < fileName.size() && fileName[at] >= '0' && fileName[at] <= '9') {
        if (at - prefix == 18)
            return std::nullopt; // more digits than a step can have
        step = step * 10 + (fileName[at] - '0');
        ++at;
    }
    if (at == prefix || at >= fileName.size() || fileName[at] != '.')
        return std::nullopt;
    std::string extension = fileName.substr(at + 1);
    if (extension.empty() || extension.find('.') != std::string::npos)
        return std::nullopt;
    return StepFileName{step, std::move(extension)};
}

bool isTorchCheckpointExtension(const std::string& extension)
{
    return extension == "pt" || extension == "pth" || extension == "pt2";
}

bool isCheckpointExtension(const std::string& extension)
{
    return isTorchCheckpointExtension(extension) || extension == "safetensors";
}

} // namespace nanscope::runformat
