#include "core/run/LayerNames.h"

#include <algorithm>
#include <cctype>

namespace nanscope::layernames {

std::string owningModule(const std::string& parameterName)
{
    const auto dot = parameterName.rfind('.');
    return dot == std::string::npos ? std::string() : parameterName.substr(0, dot);
}

std::string leafName(const std::string& parameterName)
{
    const auto dot = parameterName.rfind('.');
    return dot == std::string::npos ? parameterName : parameterName.substr(dot + 1);
}

bool isWithin(const std::string& name, const std::string& module)
{
    if (module.empty())
        return false;
    return name == module || (name.size() > module.size() && name.compare(0, module.size(), module) == 0
                              && name[module.size()] == '.');
}

int64_t moduleColumn(const std::vector<std::string>& modules, const std::string& name)
{
    auto found = std::find(modules.begin(), modules.end(), name);
    if (found == modules.end()) {
        const std::string owner = owningModule(name);
        if (!owner.empty())
            found = std::find(modules.begin(), modules.end(), owner);
    }
    return found == modules.end() ? -1 : int64_t(found - modules.begin());
}

bool mentionsAny(const std::string& name, std::initializer_list<const char*> words)
{
    std::string lower = name;
    for (char& c : lower)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : words)
        if (lower.find(word) != std::string::npos)
            return true;
    return false;
}

} // namespace nanscope::layernames
