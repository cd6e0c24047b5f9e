#include "core/run/CheckpointForm.h"

#include "core/run/RunFormat.h"

#include "CheckpointFormTable.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace nanscope {

namespace fs = std::filesystem;

namespace {

// A form file is a word and a sentence; anything longer is not one of ours.
constexpr std::streamsize kMostFormBytes = 64 * 1024;

std::optional<CheckpointForm> readFormFile(const fs::path& path)
{
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::string text(size_t(kMostFormBytes), '\0');
    in.read(text.data(), kMostFormBytes);
    text.resize(size_t(in.gcount()));
    return parseCheckpointForm(text);
}

std::string trimmed(const std::string& text)
{
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos)
        return {};
    const auto end = text.find_last_not_of(" \t\r\n");
    return text.substr(begin, end - begin + 1);
}

// The reason as one line: a multi-line message would break the one-line lists it goes into.
std::string oneLine(std::string text)
{
    for (char& c : text)
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    return trimmed(text);
}

struct KindWord
{
    CheckpointForm::Kind kind;
    const char* word;
};
constexpr KindWord kKindWords[] = {
    { CheckpointForm::Kind::Scripted, runformat::form::kScripted },
    { CheckpointForm::Kind::Traced, runformat::form::kTraced },
    { CheckpointForm::Kind::StateDict, runformat::form::kStateDict },
    { CheckpointForm::Kind::Exported, runformat::form::kExported },
};

} // namespace

CheckpointForm parseCheckpointForm(const std::string& text)
{
    CheckpointForm form;
    const auto lineEnd = text.find('\n');
    form.word = trimmed(text.substr(0, lineEnd));
    if (lineEnd != std::string::npos)
        form.whyNotReplayable = oneLine(text.substr(lineEnd + 1));
    for (const KindWord& known : kKindWords)
        if (form.word == known.word)
            form.kind = known.kind;
    return form;
}

std::string checkpointFormText(CheckpointForm::Kind kind, const std::string& whyNotReplayable)
{
    std::string text;
    for (const KindWord& known : kKindWords)
        if (known.kind == kind)
            text = std::string(known.word) + "\n";
    if (text.empty())
        throw std::invalid_argument("checkpointFormText: an unknown form has no word to write");
    if (const std::string why = oneLine(whyNotReplayable); !why.empty())
        text += why + "\n";
    return text;
}

std::string whyFormCannotReplay(const CheckpointForm& form)
{
    if (form.kind != CheckpointForm::Kind::StateDict)
        return {};
    return "is a state_dict (tensor statistics only, no program to replay): " +
           (form.whyNotReplayable.empty() ? std::string("its writer could not save the model as a program; save it "
                                                        "exported (torch.export), scripted or traced to make it replayable")
                                          : form.whyNotReplayable);
}

std::map<int64_t, CheckpointForm> readCheckpointForms(const std::string& checkpointDirectory)
{
    std::map<int64_t, CheckpointForm> forms;
    std::error_code ec;
    if (!fs::is_directory(checkpointDirectory, ec))
        return forms;
    for (const auto& entry : fs::directory_iterator(checkpointDirectory, ec)) {
        const auto name = runformat::parseStepFileName(entry.path().filename().string());
        if (name && name->extension == "form")
            if (auto form = readFormFile(entry.path()))
                forms[name->step] = std::move(*form);
    }
    return forms;
}

std::optional<CheckpointForm> readFormBeside(const std::string& checkpointPath)
{
    fs::path path(checkpointPath);
    const auto name = runformat::parseStepFileName(path.filename().string());
    if (!name || !runformat::isTorchCheckpointExtension(name->extension))
        return std::nullopt;
    return readFormFile(path.replace_extension(".form"));
}

} // namespace nanscope
