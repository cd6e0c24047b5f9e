#include "core/torch/GraphProvenance.h"

#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/scope.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>

namespace nanscope::replaytorch {

using torch::jit::Node;

std::set<std::string> modulePathsOf(const torch::jit::Module& model)
{
    std::set<std::string> paths;
    for (const auto& m : model.named_modules())
        paths.insert(m.name);
    return paths;
}

// The path, among the model's own (`paths`), of the module `name` called from the module at
// `parent`. A module called from a container's loop (`for block in self.h:`) is named by its index
// alone in the call stack ("0"): its path runs through the container ("h.0"), which is never
// called itself. Found by looking one or two containers deep.
static std::string childPath(const std::set<std::string>& paths, const std::string& parent, const std::string& name)
{
    const std::string prefix = parent.empty() ? "" : parent + ".";
    if (paths.count(prefix + name))
        return prefix + name;
    for (int depth = 0; depth < 2; ++depth) {
        std::string found;
        for (auto it = paths.lower_bound(prefix); it != paths.end() && it->compare(0, prefix.size(), prefix) == 0; ++it) {
            const std::string rest = it->substr(prefix.size());
            const size_t dots = size_t(std::count(rest.begin(), rest.end(), '.'));
            if (dots == size_t(depth + 1) && rest.size() > name.size() &&
                rest.compare(rest.size() - name.size() - 1, std::string::npos, "." + name) == 0) {
                if (!found.empty())
                    return prefix + name; // ambiguous: keep what the call stack says
                found = *it;
            }
        }
        if (!found.empty())
            return found;
    }
    return prefix + name;
}

// The module an op ran in, as PyTorch names it. The call stack of an inlined op lists the module
// instances it was called through; methods a module calls on itself ("SELF": self._conv_forward)
// add no level. An op inside an `if` or a loop that carries no call stack of its own belongs to
// the module of the block's owner.
std::string modulePathOf(const Node* node, const std::set<std::string>& paths)
{
    while (!node->callstack() && node->owningBlock() && node->owningBlock()->owningNode())
        node = node->owningBlock()->owningNode();
    auto callstack = node->callstack();
    if (!callstack)
        return "";
    std::string path;
    for (const auto& entry : (*callstack)->vec()) {
        const auto& info = std::get<2>(entry);
        if (!info)
            continue;
        std::string name = info->instance_name();
        if (name.empty() || name == "self" || name == "SELF")
            continue;
        path = childPath(paths, path, name);
    }
    return path;
}

// A traced op's "source" is the Python stack of the trace, innermost frame first, one frame a
// line: "/home/me/model.py(42): forward". The file and line of the innermost frame, when it is one.
static std::optional<std::pair<std::string, int>> tracedFrameOf(const Node* node)
{
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated; // the archive's code -> the range it was made from: the trace's frames
    const auto source = range.source();
    if (!source || range.start() >= source->size())
        return std::nullopt;
    const std::string line = source->get_line(source->lineno_for_offset(range.start())).str();
    static const std::regex frame(R"(^\s*(.+)\((\d+)\): \S+\s*$)");
    std::smatch match;
    if (!std::regex_match(line, match, frame))
        return std::nullopt;
    try {
        return std::make_pair(match[1].str(), std::stoi(match[2].str()));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Line `number` (from 1) of `file`, or "" when it cannot be read.
static std::string lineOfFile(const std::string& file, int number)
{
    std::ifstream in(file);
    std::string line;
    for (int i = 0; i < number && std::getline(in, line); ++i) {
    }
    return in ? line : std::string();
}

std::string sourceOf(const Node* node)
{
    if (auto traced = tracedFrameOf(node))
        return traced->first + ":" + std::to_string(traced->second);
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated;
    if (auto location = range.file_line_col()) {
        std::string file = std::get<0>(*location);
        return file + ":" + std::to_string(std::get<1>(*location));
    }
    if (range.source())
        return "<torchscript>:" + std::to_string(range.source()->lineno_for_offset(range.start()) + 1);
    return "";
}

// The text of the line an op came from, as the archive carries it (TorchScript keeps the source it
// was compiled from), trimmed and cut to a readable length.
std::string codeOf(const Node* node)
{
    torch::jit::SourceRange range = node->sourceRange();
    if (auto generated = range.findSourceRangeThatGenerated())
        range = *generated;
    const auto source = range.source();
    if (!source || range.start() >= source->size())
        return "";
    std::string line = source->get_line(source->lineno_for_offset(range.start())).str();
    // A trace keeps no source text, only where each op was called: the line is read from that
    // file where it still exists (else no code is shown rather than the frame's own text).
    if (auto traced = tracedFrameOf(node))
        line = lineOfFile(traced->first, traced->second);
    const auto first = line.find_first_not_of(" \t\r\n");
    const auto last = line.find_last_not_of(" \t\r\n");
    if (first == std::string::npos)
        return "";
    line = line.substr(first, last - first + 1);
    constexpr size_t kMaxLength = 160;
    if (line.size() > kMaxLength) {
        size_t cut = kMaxLength - 3;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) // not inside a UTF-8 character
            --cut;
        line = line.substr(0, cut) + "...";
    }
    return line;
}

} // namespace nanscope::replaytorch
