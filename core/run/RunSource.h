#pragma once

// What nanscope reads of a training run, whatever wrote it. The scan, the views, the report and
// every command read a run through this interface; run.h5 (RunReader) is one implementation, and
// the logs of other tools (trainer_state.json, metrics.csv, TensorBoard event files, DeepSpeed
// text logs, folders of checkpoints) are read into another (MemoryRunSource). The model is the
// run format's: tables of steps x columns, events, checkpoints and batches by step.

#include "core/Result.h"
#include "core/run/CheckpointForm.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nanscope {

class RankSet;

// One table of a run (/scalars, /layers, ...): a shared row axis given by `steps`.
struct TableInfo
{
    std::string name;
    // The shortest row count over the table's datasets: a writer killed mid-append can leave
    // its datasets one row apart, and only rows present everywhere are consistent.
    int64_t rows = 0;
    // Column names (`names`) for matrix tables; empty for scalar tables and /events.
    std::vector<std::string> names;
    // Module class names (`kinds`), /activations only.
    std::vector<std::string> kinds;
    // Value datasets besides steps/names/kinds, sorted by name.
    std::vector<std::string> datasets;
    // Those of `datasets` whose chunks carry a checksum (Fletcher-32, as both recorders write):
    // damage to them fails the read with an error instead of reading as numbers. Empty for runs
    // held in memory (other tools' logs).
    std::vector<std::string> checksummed;

    bool isChecksummed(const std::string& dataset) const
    {
        return std::find(checksummed.begin(), checksummed.end(), dataset) != checksummed.end();
    }
};

// Where a run came from and what it can and cannot show, in words for `info` and the window.
struct SourceDescription
{
    std::string format;              // "nanscope run.h5", "Hugging Face Trainer state (trainer_state.json)", ...
    std::vector<std::string> files;  // the files read, as paths
    std::vector<std::string> holds;  // "loss, grad_norm, lr on 3000 steps", "4 checkpoints"
    std::vector<std::string> lacks;  // "no per-layer data: the layer views are empty", "no batches: replay unavailable"
    std::vector<std::string> warnings; // damage worked around, naming the file and the record
    std::vector<std::string> notes;    // what was skipped as not understood
};

struct RunInfo
{
    std::string directory;
    std::string logPath;
    std::string runName;
    int formatVersion = 0;
    // Root attributes as text (format, framework, amp_dtype, loss_name, ...).
    std::map<std::string, std::string> attributes;
    std::vector<TableInfo> tables;
    // Saved checkpoints and batches, by optimizer step.
    std::map<int64_t, std::string> checkpoints;
    std::map<int64_t, std::string> batches;
    // The form each checkpoint was saved in, where its writer left a step_N.form beside it.
    std::map<int64_t, CheckpointForm> checkpointForms;
    // True for a file still marked open for write (live, or its writer killed); a closed run opens plainly.
    bool openedForSwmr = false;
    SourceDescription source;

    const TableInfo* table(const std::string& name) const;
    // Steps that replay can take: a checkpoint and a batch saved at the same step (replay runs
    // batch N through checkpoint N, and refuses any other pairing), unless the checkpoint's form
    // file says it is a state_dict (no program to run). Ascending.
    std::vector<int64_t> replayableSteps() const;
    // Why step N cannot be replayed, and what would make it replayable; empty when it can.
    std::string whyNotReplayable(int64_t step) const;
    // The run names a model factory (docs/run-format.md): its state_dict checkpoints replay eagerly,
    // in a Python child that rebuilds the model.
    bool replaysEagerly() const;
    // The factory that rebuilds the model when some checkpoints are state_dicts that replay
    // eagerly; empty when replay is TorchScript's (or there is none).
    std::string eagerReplayFactory() const;
    // Some checkpoints are torch.export programs (form `exported`): their replay runs the graph's
    // ATen ops and nothing of the file as code.
    bool hasExportedPrograms() const;
    // Why no step of the run can be replayed; empty when one can.
    std::string whyNothingReplays() const;
};

// Fills info.source.holds and .lacks from what the run has: one wording for every source.
void describeContents(RunInfo& info);
// One line for a run read from another tool's logs: where it came from and what it lacks
// ("Read from a Hugging Face Trainer state: no per-layer ...; no saved batches: ..."). Empty for
// a nanscope run, whose views need no such caveat.
std::string sourceSummary(const RunInfo& info);
// Everything of info.source as lines under headings (holds, lacks, warnings, notes).
std::string sourceDetails(const RunInfo& info);

class RunSource
{
public:
    virtual ~RunSource() = default;

    virtual const RunInfo& info() const = 0;
    const TableInfo* table(const std::string& name) const { return info().table(name); }

    // The table's steps. Empty if the table is absent.
    virtual const std::vector<int64_t>& steps(const std::string& table) const = 0;

    // A 1-D dataset of a table (a scalar series), converted to double.
    virtual Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const = 0;
    // Rows [rowBegin, rowBegin + rowCount) of a 1-D dataset: what live follow appends.
    virtual Result<std::vector<double>> readSeriesRows(const std::string& table, const std::string& dataset,
                                                       int64_t rowBegin, int64_t rowCount) const = 0;
    // One column of an [n, L] dataset: one layer's series.
    virtual Result<std::vector<float>> readColumn(const std::string& table, const std::string& dataset,
                                                  int64_t column) const = 0;
    // One row of an [n, L] dataset: every layer at one step.
    virtual Result<std::vector<float>> readRow(const std::string& table, const std::string& dataset,
                                               int64_t row) const = 0;
    // Rows [rowBegin, rowBegin + rowCount) of an [n, L] dataset, row-major.
    virtual Result<std::vector<float>> readBlock(const std::string& table, const std::string& dataset,
                                                 int64_t rowBegin, int64_t rowCount) const = 0;
    // The same rows into `out`, reusing its memory: code that streams a whole table block by block
    // reads every block into one buffer instead of paging in (and zeroing) fresh memory for each,
    // which was a fifth of a scan's time.
    virtual Status readBlockInto(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                 int64_t rowCount, std::vector<float>& out) const
    {
        auto block = readBlock(table, dataset, rowBegin, rowCount);
        if (!block)
            return Error{block.error()};
        out = std::move(*block);
        return Status::success();
    }
    // A 1-D string dataset (/events kind and message).
    virtual Result<std::vector<std::string>> readStrings(const std::string& table,
                                                         const std::string& dataset) const = 0;

    // Sees what was appended since open or the last refresh. Returns true when any table grew.
    // A source that cannot grow returns false.
    virtual Result<bool> refresh() { return false; }

    // The ranks of a multi-rank run, of which this source shows one; null for a single process.
    virtual const RankSet* rankSet() const { return nullptr; }
    virtual RankSet* rankSet() { return nullptr; }
};

} // namespace nanscope
