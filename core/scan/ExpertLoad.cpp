#include "core/scan/ExpertLoad.h"

#include "core/run/LayerNames.h"

#include <cctype>
#include <set>

namespace nanscope::scan {

namespace {

std::vector<std::string> pathParts(const std::string& name)
{
    std::vector<std::string> parts;
    size_t begin = 0;
    while (begin <= name.size()) {
        const size_t end = std::min(name.find('.', begin), name.size());
        parts.push_back(name.substr(begin, end - begin));
        begin = end + 1;
    }
    return parts;
}

bool digits(const std::string& text)
{
    if (text.empty())
        return false;
    for (char c : text)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

std::string lower(std::string text)
{
    for (char& c : text)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

} // namespace

std::optional<ExpertName> expertOf(const std::string& parameter)
{
    const std::vector<std::string> parts = pathParts(parameter);
    std::string group;
    for (size_t i = 0; i < parts.size(); ++i) {
        const std::string part = lower(parts[i]);
        // "experts.3" (a ModuleList), or "expert_3" / "experts_3" / "expert3" in one part.
        if ((part == "experts" || part == "expert") && i + 1 < parts.size() && digits(parts[i + 1]))
            return ExpertName{group.empty() ? parts[i] : group + "." + parts[i], parts[i + 1]};
        for (const char* stem : {"experts_", "expert_", "experts", "expert"}) {
            const std::string s = stem;
            if (part.size() > s.size() && part.compare(0, s.size(), s) == 0 && digits(part.substr(s.size())))
                return ExpertName{group.empty() ? s : group + "." + s, part.substr(s.size())};
        }
        group += (group.empty() ? "" : ".") + parts[i];
    }
    return std::nullopt;
}

std::vector<bool> starvedExperts(const std::vector<VanishedSpan>& vanished,
                                 const std::vector<std::string>& allParameters)
{
    // Every expert (group, index) of the model.
    std::set<std::pair<std::string, std::string>> experts;
    for (const std::string& name : allParameters)
        if (auto expert = expertOf(name))
            experts.insert({expert->group, expert->index});
    // An expert starved over [begin, end] when all of its parameters vanished: it is training when
    // one of its parameters has no vanished span overlapping those steps.
    const auto trainingDuring = [&](const std::string& group, const std::string& index, int64_t begin, int64_t end) {
        for (const std::string& name : allParameters) {
            const auto expert = expertOf(name);
            if (!expert || expert->group != group || expert->index != index)
                continue;
            bool quiet = false;
            for (const VanishedSpan& span : vanished)
                if (span.parameter == name && span.begin <= end && span.end >= begin) {
                    quiet = true;
                    break;
                }
            if (!quiet)
                return true;
        }
        return false;
    };
    std::vector<bool> starved(vanished.size(), false);
    for (size_t i = 0; i < vanished.size(); ++i) {
        const auto expert = expertOf(vanished[i].parameter);
        if (!expert)
            continue;
        for (const auto& [group, index] : experts)
            if (group == expert->group && index != expert->index &&
                trainingDuring(group, index, vanished[i].begin, vanished[i].end)) {
                starved[i] = true;
                break;
            }
    }
    return starved;
}

namespace {

// The experts a parameter belongs to, as {their container as the text names it, the container's
// parent path with its dot ("" at the model's root)}: numbered experts (expertOf), or experts
// stacked into one tensor per projection (transformers 5's Mixtral and Qwen2-MoE:
// "mlp.experts.gate_up_proj", [experts, ...]).
std::optional<std::pair<std::string, std::string>> expertsContainer(const std::string& parameter)
{
    std::string container;
    if (const auto expert = expertOf(parameter)) {
        // "mlp.experts.expert_*" where the index is inside a part (expert_0, expert_1, ...).
        container = expert->group + (expert->group.back() == '_' ? "*" : "");
    } else {
        std::string path;
        for (const std::string& part : pathParts(parameter)) {
            path += (path.empty() ? "" : ".") + part;
            if (lower(part) == "experts") {
                container = path;
                break;
            }
        }
        if (container.empty() || container == parameter)
            return std::nullopt;
    }
    // Above the parts that name the experts ("mlp." for Switch's "mlp.experts.expert_0").
    std::string parent = container;
    while (!parent.empty()) {
        const size_t dot = parent.rfind('.');
        const std::string last = dot == std::string::npos ? parent : parent.substr(dot + 1);
        if (lower(last).find("expert") == std::string::npos)
            break;
        parent = dot == std::string::npos ? std::string() : parent.substr(0, dot);
    }
    return std::make_pair(container, parent.empty() ? parent : parent + '.');
}

} // namespace

std::optional<std::string> routedExperts(const std::string& module, const std::vector<std::string>& parameters)
{
    if (expertOf(module) || expertsContainer(module + ".x"))
        return std::nullopt; // inside the experts: their own projections
    for (const std::string& name : parameters) {
        const auto experts = expertsContainer(name);
        if (!experts)
            continue;
        // The experts' parent must hold the module too, and the module's own name say it routes.
        const std::string& parent = experts->second;
        if (module.compare(0, parent.size(), parent) != 0)
            continue;
        const std::string own = lower(module.substr(parent.size()));
        if (layernames::mentionsAny(own, {"router", "gate", "gating"}) &&
            !layernames::mentionsAny(own, {"proj", "shared", "up", "down"}))
            return experts->first;
    }
    return std::nullopt;
}

bool adapterParameter(const std::string& parameter)
{
    return layernames::mentionsAny(parameter, {"lora_", "lora.", "adapter", "ia3_", "prompt_encoder", "prefix_encoder"});
}

} // namespace nanscope::scan
