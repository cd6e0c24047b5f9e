#include "core/run/RankSet.h"

#include "core/run/Hdf5Handle.h"
#include "core/run/RunFormat.h"

#include <algorithm>

namespace nanscope {

const char* toString(RankState state)
{
    switch (state) {
    case RankState::Finished: return runformat::kRankStateFinished;
    case RankState::Running: return runformat::kRankStateRunning;
    case RankState::Unknown: return "unknown";
    }
    return "unknown";
}

Result<std::unique_ptr<RankSet>> RankSet::create(std::string directory, int worldSize,
                                                 std::vector<RankMember> members, std::vector<std::string> warnings)
{
    std::sort(members.begin(), members.end(), [](const RankMember& a, const RankMember& b) { return a.rank < b.rank; });
    const auto readable = std::find_if(members.begin(), members.end(), [](const RankMember& m) { return m.run != nullptr; });
    if (readable == members.end()) {
        std::string why = directory + ": a multi-rank run, but no rank's run could be read";
        for (const RankMember& m : members)
            why += "; rank " + std::to_string(m.rank) + ": " + m.error;
        return Error{why};
    }
    std::unique_ptr<RankSet> set(new RankSet());
    set->m_directory = std::move(directory);
    set->m_worldSize = worldSize;
    set->m_selected = size_t(readable - members.begin());
    set->m_members = std::move(members);
    set->m_warnings = std::move(warnings);
    set->describeShownRank();
    return Result<std::unique_ptr<RankSet>>(std::move(set));
}

const RankMember* RankSet::member(int rank) const
{
    for (const RankMember& m : m_members)
        if (m.rank == rank)
            return &m;
    return nullptr;
}

Status RankSet::selectRank(int rank)
{
    for (size_t i = 0; i < m_members.size(); ++i) {
        if (m_members[i].rank != rank)
            continue;
        if (!m_members[i].run)
            return Error{m_directory + ": rank " + std::to_string(rank) + " cannot be shown: " + m_members[i].error};
        m_selected = i;
        describeShownRank();
        return Status::success();
    }
    return Error{m_directory + ": no rank " + std::to_string(rank) + " (the run has ranks 0.." +
                 std::to_string(m_worldSize - 1) + ")"};
}

bool RankSet::readsInParallel() const
{
    return hdf5::isThreadSafe();
}

void RankSet::describeShownRank()
{
    const RankMember& shownMember = m_members[m_selected];
    m_info = shownMember.run->info();
    int readable = 0;
    for (const RankMember& m : m_members)
        readable += m.run ? 1 : 0;
    m_info.source.format = "nanscope multi-rank run (" + std::string(runformat::kRankManifestName) + "), rank " +
                           std::to_string(shownMember.rank) + " shown";
    m_info.source.holds.insert(m_info.source.holds.begin(),
                               std::to_string(m_worldSize) + " ranks (" + std::to_string(readable) +
                                   " readable) in " + m_directory + "; showing rank " +
                                   std::to_string(shownMember.rank));
    for (const std::string& warning : m_warnings)
        m_info.source.warnings.push_back(warning);
    for (const RankMember& m : m_members)
        if (!m.run)
            m_info.source.warnings.push_back("rank " + std::to_string(m.rank) + ": " + m.error);
}

const std::vector<int64_t>& RankSet::steps(const std::string& table) const
{
    return shown().steps(table);
}

Result<std::vector<double>> RankSet::readSeries(const std::string& table, const std::string& dataset) const
{
    return shown().readSeries(table, dataset);
}

Result<std::vector<double>> RankSet::readSeriesRows(const std::string& table, const std::string& dataset,
                                                    int64_t rowBegin, int64_t rowCount) const
{
    return shown().readSeriesRows(table, dataset, rowBegin, rowCount);
}

Result<std::vector<float>> RankSet::readColumn(const std::string& table, const std::string& dataset,
                                               int64_t column) const
{
    return shown().readColumn(table, dataset, column);
}

Result<std::vector<float>> RankSet::readRow(const std::string& table, const std::string& dataset, int64_t row) const
{
    return shown().readRow(table, dataset, row);
}

Result<std::vector<float>> RankSet::readBlock(const std::string& table, const std::string& dataset,
                                              int64_t rowBegin, int64_t rowCount) const
{
    return shown().readBlock(table, dataset, rowBegin, rowCount);
}

Status RankSet::readBlockInto(const std::string& table, const std::string& dataset, int64_t rowBegin,
                              int64_t rowCount, std::vector<float>& out) const
{
    return shown().readBlockInto(table, dataset, rowBegin, rowCount, out);
}

Result<std::vector<std::string>> RankSet::readStrings(const std::string& table, const std::string& dataset) const
{
    return shown().readStrings(table, dataset);
}

Result<bool> RankSet::refresh()
{
    bool shownGrew = false;
    for (size_t i = 0; i < m_members.size(); ++i) {
        if (!m_members[i].run)
            continue;
        auto grew = m_members[i].run->refresh();
        if (!grew)
            return Error{grew.error()};
        if (i == m_selected)
            shownGrew = *grew;
    }
    if (shownGrew)
        describeShownRank();
    return shownGrew;
}

} // namespace nanscope
