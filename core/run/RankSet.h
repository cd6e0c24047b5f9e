#pragma once

// The ranks of a multi-rank run (torch.distributed; docs/run-format.md, "Multi-rank runs"): one
// run directory per rank, each read by its own RunSource. The set is itself a RunSource showing
// one rank (the selected one), so every command and view that reads one run reads a multi-rank
// run unchanged; the multi-rank scan and the rank views reach the others through rankSet().

#include "core/Result.h"
#include "core/run/RunSource.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// What a rank wrote about itself in rank.json.
enum class RankState {
    Finished, // its recorder closed the run
    Running,  // not closed: the job is live, or the rank died (a killed rank cannot write)
    Unknown   // no readable rank.json
};

struct RankMember
{
    int rank = 0;
    std::string directory;          // the rank's run directory
    std::shared_ptr<RunSource> run; // null when it could not be opened
    std::string error;              // why not, naming the file
    RankState state = RankState::Unknown;
    std::optional<int64_t> recordedLastStep; // rank.json's last_step, once finished
    std::string host;
};

class RankSet : public RunSource
{
public:
    // `members` by rank; `worldSize` is the manifest's (or the number of rank folders found).
    // Shows the first readable rank. An error naming the folder and each rank's reason when no
    // member has a readable run.
    static Result<std::unique_ptr<RankSet>> create(std::string directory, int worldSize,
                                                   std::vector<RankMember> members,
                                                   std::vector<std::string> warnings = {});

    const std::string& directory() const { return m_directory; }
    int worldSize() const { return m_worldSize; }
    const std::vector<RankMember>& members() const { return m_members; }
    const RankMember* member(int rank) const;
    int selectedRank() const { return m_members[m_selected].rank; }
    // Shows `rank` from now on. An error, naming the rank, when the set has no readable run of it.
    Status selectRank(int rank);
    // The members' sources may be read from several threads at once, one thread per member:
    // true when libhdf5 is thread-safe (Debian's is; its calls are serialised inside it).
    bool readsInParallel() const;

    const RunInfo& info() const override { return m_info; }
    const std::vector<int64_t>& steps(const std::string& table) const override;
    Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const override;
    Result<std::vector<double>> readSeriesRows(const std::string& table, const std::string& dataset,
                                               int64_t rowBegin, int64_t rowCount) const override;
    Result<std::vector<float>> readColumn(const std::string& table, const std::string& dataset,
                                          int64_t column) const override;
    Result<std::vector<float>> readRow(const std::string& table, const std::string& dataset,
                                       int64_t row) const override;
    Result<std::vector<float>> readBlock(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                         int64_t rowCount) const override;
    Status readBlockInto(const std::string& table, const std::string& dataset, int64_t rowBegin, int64_t rowCount,
                         std::vector<float>& out) const override;
    Result<std::vector<std::string>> readStrings(const std::string& table,
                                                 const std::string& dataset) const override;
    // Refreshes every rank; true when the shown rank grew.
    Result<bool> refresh() override;

    const RankSet* rankSet() const override { return this; }
    RankSet* rankSet() override { return this; }

private:
    RankSet() = default;
    const RunSource& shown() const { return *m_members[m_selected].run; }
    void describeShownRank();

    std::string m_directory;
    int m_worldSize = 0;
    std::vector<RankMember> m_members;
    std::vector<std::string> m_warnings;
    size_t m_selected = 0;
    RunInfo m_info; // the shown rank's, with the set described in its source
};

// "rank 2 of 4" style name of a state, for info and the scan: "finished", "running", "unknown".
const char* toString(RankState state);

} // namespace nanscope
