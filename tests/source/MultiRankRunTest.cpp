// Opening a multi-rank run from disk: the manifest, each rank's run.h5 and rank.json, and what a
// user is told when a rank is missing or the manifest is wrong.
#include "SourceTestSupport.h"

#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"
#include "core/open/OpenRun.h"

#include <filesystem>

namespace nanscope {
namespace {

namespace fs = std::filesystem;
namespace rf = runformat;

void writeRank(const fs::path& dir, int steps, const char* state)
{
    RunSchema schema;
    schema.scalars = {"loss", "grad_norm", rf::kLocalGradNorm};
    auto writer = RunWriter::create(dir.string(), schema);
    ASSERT_TRUE(writer) << writer.error();
    for (int step = 0; step < steps; ++step)
        ASSERT_TRUE((*writer)->appendScalars(step, {{"loss", 1.0}, {"grad_norm", 0.5}, {rf::kLocalGradNorm, 0.6}}));
    ASSERT_TRUE((*writer)->close());
    if (state)
        std::ofstream(dir / rf::kRankStatusName) << "{\"rank\": 0, \"state\": \"" << state << "\", \"last_step\": "
                                                 << steps - 1 << "}";
}

std::string manifest(int worldSize, const std::string& directoryOfRank1 = "rank_00001")
{
    std::string text = "{\"format\": \"training-run-ranks\", \"format_version\": 1, \"world_size\": " +
                       std::to_string(worldSize) + ", \"ranks\": [";
    for (int rank = 0; rank < worldSize; ++rank)
        text += std::string(rank ? ", " : "") + "{\"rank\": " + std::to_string(rank) + ", \"directory\": \"" +
                (rank == 1 ? directoryOfRank1 : rf::rankDirName(rank)) + "\"}";
    return text + "]}";
}

TEST(MultiRankRun, OpensEveryRankAndShowsRankZero)
{
    testing::ScratchFolder job;
    writeRank(fs::path(job.path()) / "rank_00000", 10, "finished");
    writeRank(fs::path(job.path()) / "rank_00001", 6, "running");
    job.write(rf::kRankManifestName, manifest(2));
    auto run = openRun(job.path());
    ASSERT_TRUE(run) << run.error();
    RankSet* ranks = (*run)->rankSet();
    ASSERT_NE(ranks, nullptr);
    EXPECT_EQ(ranks->worldSize(), 2);
    EXPECT_EQ(ranks->selectedRank(), 0);
    EXPECT_EQ((*run)->steps(rf::kScalars).size(), 10u);
    EXPECT_EQ(ranks->member(0)->state, RankState::Finished);
    EXPECT_EQ(ranks->member(1)->state, RankState::Running);
    ASSERT_TRUE(ranks->selectRank(1));
    EXPECT_EQ((*run)->steps(rf::kScalars).size(), 6u);
    EXPECT_NE((*run)->info().source.format.find("rank 1"), std::string::npos);
}

TEST(MultiRankRun, RankWithoutAFolderIsKeptWithItsReason)
{
    testing::ScratchFolder job;
    writeRank(fs::path(job.path()) / "rank_00000", 5, "finished");
    job.write(rf::kRankManifestName, manifest(2));
    auto run = openRun(job.path());
    ASSERT_TRUE(run) << run.error();
    const RankMember* missing = (*run)->rankSet()->member(1);
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(missing->run, nullptr);
    EXPECT_NE(missing->error.find("rank_00001"), std::string::npos) << missing->error;
    EXPECT_FALSE((*run)->rankSet()->selectRank(1));
}

TEST(MultiRankRun, FolderOfRankRunsWithoutManifestOpens)
{
    testing::ScratchFolder job;
    writeRank(fs::path(job.path()) / "rank_00000", 5, nullptr);
    writeRank(fs::path(job.path()) / "rank_00001", 5, nullptr);
    auto run = openRun(job.path());
    ASSERT_TRUE(run) << run.error();
    ASSERT_NE((*run)->rankSet(), nullptr);
    EXPECT_EQ((*run)->rankSet()->worldSize(), 2);
    EXPECT_EQ((*run)->rankSet()->member(1)->state, RankState::Unknown);
    EXPECT_FALSE((*run)->info().source.warnings.empty()); // says the manifest is missing
}

TEST(MultiRankRun, ManifestPointingOutsideTheRunIsRefused)
{
    testing::ScratchFolder job;
    writeRank(fs::path(job.path()) / "rank_00000", 5, "finished");
    job.write(rf::kRankManifestName, manifest(2, "../../elsewhere"));
    auto run = openRun(job.path());
    ASSERT_FALSE(run);
    EXPECT_NE(run.error().find(rf::kRankManifestName), std::string::npos) << run.error();
}

TEST(MultiRankRun, DamagedManifestIsNamed)
{
    testing::ScratchFolder job;
    writeRank(fs::path(job.path()) / "rank_00000", 5, "finished");
    job.write(rf::kRankManifestName, "{\"format\": \"training-run-ranks\", \"world_");
    auto run = openRun(job.path());
    ASSERT_FALSE(run);
    EXPECT_NE(run.error().find("not valid JSON"), std::string::npos) << run.error();
}

} // namespace
} // namespace nanscope
