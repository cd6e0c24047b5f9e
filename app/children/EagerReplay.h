#pragma once

// Eager replay: a state_dict checkpoint has no program, so the model is rebuilt and run in a
// Python child (python/nanscope_recorder/eager_replay.py) by the factory the recorder named. The
// child measures every module and torch call; its JSON is the replay JSON with nothing judged,
// and the judgements (culprit, findings, layer filter) are core/replay's, as for TorchScript.

#include "core/replay/ReplayTrace.h"
#include "core/Result.h"
#include "core/replay/ReplayOptions.h"

#include <QString>
#include <QStringList>

#include <map>
#include <string>

namespace nanscope {

struct EagerReplayRequest
{
    QString python;          // the interpreter; empty: the run's python_executable, else python3
    QString factory;         // "module:callable" or "/path/script.py:callable"
    QStringList importPaths; // folders the factory's module imports from
    ReplayOptions options;   // checkpoint, batch, loss name, layer, dtype, device, mode, bisect
};

// The factory, folders and interpreter a run names (run.h5's root attributes); `python` and
// `factory` given on the command line win.
EagerReplayRequest eagerReplayRequestFor(const std::map<std::string, std::string>& runAttributes,
                                         const QString& python, const QString& factory);

// Runs the child and judges its ops. The error names what is missing: the interpreter, torch or
// nanscope_recorder in it, the factory's module, a checkpoint that does not fit the model.
Result<ReplayResult> runEagerReplay(const EagerReplayRequest& request);

} // namespace nanscope
