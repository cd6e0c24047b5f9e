#pragma once

#include "core/Result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nanscope {

// One table group of run.h5 (/scalars, /layers, ...): a shared row axis given by `steps`.
struct TableInfo
{
    std::string name;
    // The shortest row count over the group's datasets: a writer killed mid-append can leave
    // its datasets one row apart, and only rows present everywhere are consistent.
    int64_t rows = 0;
    // Column names (`names`) for matrix tables; empty for /scalars and /events.
    std::vector<std::string> names;
    // Module class names (`kinds`), /activations only.
    std::vector<std::string> kinds;
    // Value datasets besides steps/names/kinds, sorted by name.
    std::vector<std::string> datasets;
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
    // True for a file still marked open for write (live, or its writer killed); a closed run opens plainly.
    bool openedForSwmr = false;

    const TableInfo* table(const std::string& name) const;
    // Steps that replay can take: a checkpoint and a batch saved at the same step (replay runs
    // batch N through checkpoint N, and refuses any other pairing). Ascending.
    std::vector<int64_t> replayableSteps() const;
};

// Reads a run directory. Opens run.h5 read-only (SWMR read when the file is still marked open
// for write, so a run still being written can be followed), validates it against the contract on open, and then
// reads single columns, rows or row blocks without loading whole matrices. NaN and Inf are data.
// Never writes anything into the run directory.
class RunReader
{
public:
    ~RunReader();
    RunReader(const RunReader&) = delete;
    RunReader& operator=(const RunReader&) = delete;

    // Reads the file's strings in a child process first (RunFileProbe.h), so that a file that
    // crashes or hangs libhdf5 is an error naming it; then opens it here.
    static Result<std::unique_ptr<RunReader>> open(const std::string& runDirectory);
    // Without the child-process probe: for the probe itself, and for files this process wrote.
    static Result<std::unique_ptr<RunReader>> openInThisProcess(const std::string& runDirectory);
    // How long the probe may take before the file is called damaged: a few seconds, as a user
    // would wait for a window to show a run.
    static constexpr int kProbeTimeoutMs = 5000;

    const RunInfo& info() const { return m_info; }
    const TableInfo* table(const std::string& name) const { return m_info.table(name); }

    // The table's steps, cached at open and refresh. Empty if the table is absent.
    const std::vector<int64_t>& steps(const std::string& table) const;

    // A 1-D dataset of a table (a scalar series), converted to double.
    Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const;
    // Rows [rowBegin, rowBegin + rowCount) of a 1-D dataset: what live follow appends.
    Result<std::vector<double>> readSeriesRows(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                               int64_t rowCount) const;
    // One column of an [n, L] dataset: one layer's series.
    Result<std::vector<float>> readColumn(const std::string& table, const std::string& dataset, int64_t column) const;
    // One row of an [n, L] dataset: every layer at one step.
    Result<std::vector<float>> readRow(const std::string& table, const std::string& dataset, int64_t row) const;
    // Rows [rowBegin, rowBegin + rowCount) of an [n, L] dataset, row-major.
    Result<std::vector<float>> readBlock(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                         int64_t rowCount) const;
    // A 1-D string dataset (/events kind and message).
    Result<std::vector<std::string>> readStrings(const std::string& table, const std::string& dataset) const;

    // Sees rows appended since open or the last refresh. Returns true when any table grew.
    // Also rescans checkpoints/ and batches/.
    Result<bool> refresh();

private:
    struct Handles;
    RunReader();
    Status load(const std::string& runDirectory);
    Status loadTable(const std::string& name);
    Status scanSteppedFiles();
    // The error of a failed read: a checksum failure is named as corruption with the steps it covers.
    Error readFailure(const std::string& table, const std::string& dataset, int64_t rowBegin, int64_t rowEnd) const;
    Result<int64_t> checkedDataset(const std::string& table, const std::string& dataset, int rank) const;

    std::unique_ptr<Handles> m_handles;
    RunInfo m_info;
    std::map<std::string, std::vector<int64_t>> m_steps;
};

// Lists `step_<N>.<ext>` files of a folder by step. Missing folder -> empty map.
std::map<int64_t, std::string> listSteppedFiles(const std::string& directory);

} // namespace nanscope
