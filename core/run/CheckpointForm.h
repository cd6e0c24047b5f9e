#pragma once

// Which form a checkpoint was saved in, as its writer says in checkpoints/step_N.form beside it
// (docs/run-format.md): the first line is `exported` (a torch.export archive, step_N.pt2),
// `scripted`, `traced` or `state_dict`; the line after it says why the forms before it in that
// order could not be saved, and for a state_dict what would make it replayable. A checkpoint without a form file is whatever its bytes are (replay finds out).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace nanscope {

struct CheckpointForm
{
    enum class Kind { Scripted, Traced, StateDict, Exported, Unknown };
    Kind kind = Kind::Unknown;
    std::string word;              // the first line as written ("traced")
    std::string whyNotReplayable;  // the writer's words after it (why not an earlier form; a state_dict's reason), one line
};

// The text of a form file, as both recorders write it (the C++ Guard through this, the Python one
// through run_format.checkpoint_form_text; tests/data/checkpoint_form_cases.json holds both to the
// same bytes): the kind's word on the first line, then the reason on one line when there is one.
std::string checkpointFormText(CheckpointForm::Kind kind, const std::string& whyNotReplayable = {});

// Reads a form file's text. An unknown first word is Kind::Unknown (a newer writer's form).
CheckpointForm parseCheckpointForm(const std::string& text);

// The form of every checkpoint of `checkpointDirectory` that has a step_N.form, by step.
std::map<int64_t, CheckpointForm> readCheckpointForms(const std::string& checkpointDirectory);

// Why a checkpoint of this form cannot be replayed and what would make it replayable ("is a
// state_dict ...: the model could not be scripted (...) nor traced (...); ..."); empty when it may be.
std::string whyFormCannotReplay(const CheckpointForm& form);

// The form file beside a checkpoint file (step_N.pt -> step_N.form), when there is one.
std::optional<CheckpointForm> readFormBeside(const std::string& checkpointPath);

} // namespace nanscope
