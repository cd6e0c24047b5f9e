#include "core/open/OptimizerScanFacts.h"

#include "core/run/ChildProcessCall.h"
#include "core/importers/OptimizerState.h"

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

namespace {

// Reads the optimizer state; runs in the child (ChildProcessCall.h).
scan::ScanFacts readFacts(const StateFile& file, std::vector<std::string>& notes)
{
    scan::ScanFacts facts;
    const ModelParametersFound model = findModelParameters(file.path.parent_path().string());
    auto summary = readOptimizerState(file.path.string(), model.parameters);
    if (!summary) {
        notes.push_back("optimizer state not read: " + summary.error());
        return facts;
    }
    if (!summary->isAdam)
        return facts;
    scan::OptimizerStateFacts state;
    state.step = file.step;
    state.file = file.path.string();
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

std::string encode(const scan::ScanFacts& facts, const std::vector<std::string>& notes)
{
    ByteWriter out;
    out.texts(notes);
    out.number<uint64_t>(facts.optimizerStates.size());
    for (const auto& state : facts.optimizerStates) {
        out.number<int64_t>(state.step);
        out.text(state.file);
        out.number<uint64_t>(state.parameters.size());
        for (const auto& p : state.parameters) {
            out.text(p.parameter);
            out.number<double>(p.share);
            out.number<int64_t>(p.elements);
            out.number<uint8_t>(p.eps ? 1 : 0);
            out.number<double>(p.eps.value_or(0));
        }
    }
    return out.take();
}

scan::ScanFacts decode(const std::string& bytes, std::vector<std::string>& notes)
{
    ByteReader in(bytes);
    scan::ScanFacts facts;
    for (auto& note : in.texts())
        notes.push_back(std::move(note));
    const uint64_t states = in.number<uint64_t>();
    for (uint64_t i = 0; i < states && i < bytes.size(); ++i) {
        scan::OptimizerStateFacts state;
        state.step = in.number<int64_t>();
        state.file = in.text();
        const uint64_t parameters = in.number<uint64_t>();
        for (uint64_t k = 0; k < parameters && k < bytes.size(); ++k) {
            scan::ParameterEpsilonShare p;
            p.parameter = in.text();
            p.share = in.number<double>();
            p.elements = in.number<int64_t>();
            const bool hasEps = in.number<uint8_t>() != 0;
            const double eps = in.number<double>();
            if (hasEps)
                p.eps = eps;
            state.parameters.push_back(std::move(p));
        }
        facts.optimizerStates.push_back(std::move(state));
    }
    return facts;
}

} // namespace

scan::ScanFacts optimizerScanFacts(const std::string& runDirectory, std::vector<std::string>& notes)
{
    std::error_code error;
    if (!fs::is_directory(runDirectory, error))
        return {};
    const auto file = newestOptimizerState(runDirectory);
    if (!file)
        return {};
    // The state is unpickled in a child: a damaged or hostile optimizer.pt must not take down the
    // window that scans the run (ChildProcessCall.h).
    auto answer = computeInChildProcess(file->path.string(), [&](const ProgressCallback&) -> Result<std::string> {
        std::vector<std::string> childNotes;
        const scan::ScanFacts facts = readFacts(*file, childNotes);
        return encode(facts, childNotes);
    });
    if (!answer) {
        notes.push_back("optimizer state not read: " + answer.error());
        return {};
    }
    try {
        return decode(*answer, notes);
    } catch (const std::exception& e) {
        notes.push_back("optimizer state not read: " + file->path.string() + ": " + e.what());
        return {};
    }
}

} // namespace nanscope
