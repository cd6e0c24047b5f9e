#pragma once

#include "core/Result.h"
#include "core/run/RunSource.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nanscope {

// Reads a run directory. Opens run.h5 read-only (SWMR read when the file is still marked open
// for write, so a run still being written can be followed), validates it against the contract on open, and then
// reads single columns, rows or row blocks without loading whole matrices. NaN and Inf are data.
// Never writes anything into the run directory.
class RunReader : public RunSource
{
public:
    ~RunReader() override;
    RunReader(const RunReader&) = delete;
    RunReader& operator=(const RunReader&) = delete;

    // Reads the file's strings in a child process first (RunFileProbe.h), so that a file that
    // crashes or hangs libhdf5 is an error naming it; then opens it here.
    static Result<std::unique_ptr<RunReader>> open(const std::string& runDirectory);
    // `open` for several runs (the ranks of a multi-rank run), probed in one child process in
    // turn; one result per directory, in order, each as `open` would give it.
    static std::vector<Result<std::unique_ptr<RunReader>>> openEach(const std::vector<std::string>& runDirectories);
    // Without the child-process probe: for the probe itself, and for files this process wrote.
    static Result<std::unique_ptr<RunReader>> openInThisProcess(const std::string& runDirectory);
    // How long the probe may take before the file is called damaged: a few seconds, as a user
    // would wait for a window to show a run.
    static constexpr int kProbeTimeoutMs = 5000;

    const RunInfo& info() const override { return m_info; }

    // The table's steps are cached at open and refresh.
    const std::vector<int64_t>& steps(const std::string& table) const override;
    Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const override;
    Result<std::vector<double>> readSeriesRows(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                               int64_t rowCount) const override;
    Result<std::vector<float>> readColumn(const std::string& table, const std::string& dataset,
                                          int64_t column) const override;
    Result<std::vector<float>> readRow(const std::string& table, const std::string& dataset,
                                       int64_t row) const override;
    Result<std::vector<float>> readBlock(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                         int64_t rowCount) const override;
    Status readBlockInto(const std::string& table, const std::string& dataset, int64_t rowBegin, int64_t rowCount,
                         std::vector<float>& out) const override;
    Result<std::vector<std::string>> readStrings(const std::string& table, const std::string& dataset) const override;

    // Sees rows appended since open or the last refresh; also rescans checkpoints/ and batches/.
    Result<bool> refresh() override;

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

} // namespace nanscope
