#pragma once

// Turns what the readers of other tools' logs found (ScalarLog) into a run: the run format's
// tables, so that the scan, the views and the report read a trainer_state.json or an event file
// as they read run.h5. Several logs of one folder (a Trainer's trainer_state.json and its runs/
// event files) merge: each series is taken from the log that has the most of it.

#include "core/Result.h"
#include "core/run/MemoryRunSource.h"
#include "core/importers/ScalarLog.h"

#include <memory>
#include <string>
#include <vector>

namespace nanscope {

class RunSourceBuilder
{
public:
    // `location`: the folder or file the user opened.
    explicit RunSourceBuilder(std::string location);

    // Logs added first win ties between series of equal length.
    void add(ScalarLog log);
    // Checkpoints by step (a checkpoint-N/ folder's weights file, an epoch=...ckpt), with a word
    // on what they are. Checkpoints of other tools are state_dicts, not TorchScript: they can be
    // inspected tensor by tensor but not replayed.
    void addCheckpoints(std::map<int64_t, std::string> checkpoints);
    // A per-layer table made from the checkpoints (parameter norms across them, ...).
    void addMatrixTable(const std::string& name, std::vector<std::string> columns, std::vector<int64_t> steps,
                        std::map<std::string, std::vector<float>> datasets);
    void addWarning(std::string warning) { m_warnings.push_back(std::move(warning)); }
    void addNote(std::string note) { m_notes.push_back(std::move(note)); }

    bool empty() const { return m_logs.empty() && m_checkpoints.empty(); }

    // The run. Tables: /scalars holds the series logged on the loss's steps; each other logging
    // rate gets a table of its own (the evaluation's, an epoch-level one), since a value that was
    // not logged must never read as NaN. An error only when nothing at all was found.
    Result<std::unique_ptr<MemoryRunSource>> build();

private:
    struct MatrixTable
    {
        std::string name;
        std::vector<std::string> columns;
        std::vector<int64_t> steps;
        std::map<std::string, std::vector<float>> datasets;
    };

    std::string m_location;
    std::vector<ScalarLog> m_logs;
    std::map<int64_t, std::string> m_checkpoints;
    std::vector<MatrixTable> m_matrixTables;
    std::vector<std::string> m_warnings, m_notes;
};

} // namespace nanscope
