#include "core/source/OptimizerScanFacts.h"

#include "core/source/OptimizerState.h"

#include <filesystem>
#include <optional>

namespace nanscope {

namespace fs = std::filesystem;

namespace {

struct StateFile
{
    int64_t step = 0;
    fs::path path;
};

// The newest optimizer.pt: checkpoint-N/optimizer.pt with the largest N, else one in the folder.
std::optional<StateFile> newestOptimizerState(const fs::path& directory)
{
    std::optional<StateFile> newest;
    std::error_code error;
    for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("checkpoint-", 0) != 0 || !fs::is_regular_file(it->path() / "optimizer.pt", error))
            continue;
        try {
            const int64_t step = std::stoll(name.substr(11));
            if (!newest || step > newest->step)
                newest = StateFile{step, it->path() / "optimizer.pt"};
        } catch (const std::exception&) {
        }
    }
    if (!newest && fs::is_regular_file(directory / "optimizer.pt", error))
        newest = StateFile{0, directory / "optimizer.pt"};
    return newest;
}

} // namespace

scan::ScanFacts optimizerScanFacts(const std::string& runDirectory, std::vector<std::string>& notes)
{
    scan::ScanFacts facts;
    std::error_code error;
    if (!fs::is_directory(runDirectory, error))
        return facts;
    const auto file = newestOptimizerState(runDirectory);
    if (!file)
        return facts;
    const ModelParametersFound model = findModelParameters(file->path.parent_path().string());
    auto summary = readOptimizerState(file->path.string(), model.parameters);
    if (!summary) {
        notes.push_back("optimizer state not read: " + summary.error());
        return facts;
    }
    if (!summary->isAdam)
        return facts;
    scan::OptimizerStateFacts state;
    state.step = file->step;
    state.file = file->path.string();
    for (const OptimizerParameterState& p : summary->parameters) {
        if (!p.epsilonDominatedShare)
            continue;
        int64_t elements = 1;
        for (int64_t d : p.shape)
            elements *= d;
        scan::ParameterEpsilonShare share;
        share.parameter = p.name;
        share.share = *p.epsilonDominatedShare;
        share.elements = elements;
        if (p.group < summary->groups.size())
            share.eps = summary->groups[p.group].eps;
        state.parameters.push_back(std::move(share));
    }
    if (!state.parameters.empty())
        facts.optimizerStates.push_back(std::move(state));
    return facts;
}

} // namespace nanscope
