#include "core/importers/RecordSteps.h"

#include <array>
#include <cctype>

namespace nanscope::records {

namespace {

// Case-blind, and a space matches '_' ("global step" is "global_step").
bool equalsIgnoringCase(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const char c = a[i] == ' ' ? '_' : char(std::tolower(static_cast<unsigned char>(a[i])));
        if (c != b[i])
            return false;
    }
    return true;
}

std::string_view lastPart(std::string_view name)
{
    while (!name.empty() && (name.front() == '\'' || name.front() == '"'))
        name.remove_prefix(1);
    while (!name.empty() && (name.back() == '\'' || name.back() == '"'))
        name.remove_suffix(1);
    const size_t slash = name.rfind('/');
    return slash == std::string_view::npos ? name : name.substr(slash + 1);
}

// Seen in real logs (tests/source/LogStructureTest.cpp cites each): Hugging Face and Lightning
// `global_step`, W&B `_step`, fairseq `num_updates`, detectron2 `iteration`, mmdetection `iter`,
// pix2pix `iters`, LLaMA-Factory `current_steps`, Composer `batch`, stable-baselines3
// `time/total_timesteps`.
constexpr std::array<std::string_view, 15> kStepNames = {
    "global_step", "globalstep", "step",  "_step",          "num_updates", "iteration", "iter",     "iters",
    "it",          "current_steps",       "updates",        "update",      "batch",     "timesteps", "total_timesteps"};

} // namespace

int stepKeyRank(std::string_view name)
{
    const std::string_view part = lastPart(name);
    for (size_t i = 0; i < kStepNames.size(); ++i)
        if (equalsIgnoringCase(part, kStepNames[i]))
            return int(i);
    return -1;
}

bool isEpochKey(std::string_view name)
{
    return equalsIgnoringCase(lastPart(name), "epoch");
}

std::string countText(uint64_t count)
{
    std::string digits = std::to_string(count);
    for (int at = int(digits.size()) - 3; at > 0; at -= 3)
        digits.insert(size_t(at), ",");
    return digits;
}

} // namespace nanscope::records
