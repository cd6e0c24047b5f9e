// Opening what users already have: the folder layouts of the Trainer and Lightning, several logs
// of one run merged, a folder with nothing readable, and never a byte written into it.

#include "SourceTestSupport.h"

#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"
#include "core/open/RunScan.h"
#include "core/open/OpenRun.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace nanscope {
namespace {

using testing::realLog;
using testing::ScratchFolder;

const char* kLoraState = "TANGHULU6__Llama3-8B-Mob__lr2e-3-divergence/trainer_state.json";
const char* kHealthyState = "TANGHULU6__Llama3-8B-Mob__lr2e-4-healthy/trainer_state.json";

void linkInto(const std::string& target, const fs::path& link)
{
    fs::create_directories(link.parent_path());
    fs::create_symlink(target, link);
}

// Every file under `folder` with its size and modification time.
std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> listing(const fs::path& folder)
{
    std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> files;
    for (const auto& entry : fs::recursive_directory_iterator(folder))
        if (entry.is_regular_file())
            files[entry.path().string()] = {entry.file_size(), entry.last_write_time()};
    return files;
}

TEST(OpenRun, TrainerOutputFolderReadsTheLongestHistoryOfItsCheckpoints)
{
    NANSCOPE_REQUIRE_REAL_LOG(realLog(kLoraState));
    ScratchFolder out;
    // checkpoint-3000 holds the whole history; checkpoint-60 an early, short one.
    linkInto(realLog(kLoraState), fs::path(out.path()) / "checkpoint-3000" / "trainer_state.json");
    linkInto(realLog("5hiri__Fine-Tuning-LLM-Test__ckpt60-nan-step18/trainer_state.json"),
             fs::path(out.path()) / "checkpoint-60" / "trainer_state.json");
    auto run = openRun(out.path());
    ASSERT_TRUE(run.ok()) << run.error();
    const RunInfo& info = (*run)->info();
    EXPECT_NE(info.source.format.find("Hugging Face Trainer"), std::string::npos);
    EXPECT_EQ(info.table(runformat::kScalars)->rows, 3000);
    EXPECT_EQ(info.table(runformat::kEval)->rows, 30);
    EXPECT_TRUE(info.replayableSteps().empty());
}

TEST(OpenRun, TrainerStateAndItsEventFilesMergeIntoOneRun)
{
    const std::string folder = realLog("10844110__t5-summarization-demo__trainer-state-and-tfevents");
    NANSCOPE_REQUIRE_REAL_LOG(folder);
    auto run = openRun(folder);
    ASSERT_TRUE(run.ok()) << run.error();
    const RunInfo& info = (*run)->info();
    EXPECT_NE(info.source.format.find("Trainer"), std::string::npos) << info.source.format;
    EXPECT_NE(info.source.format.find("TensorBoard"), std::string::npos) << info.source.format;
    EXPECT_EQ(info.source.files.size(), 3u);
    const TableInfo* scalars = info.table(runformat::kScalars);
    ASSERT_NE(scalars, nullptr);
    for (const char* name : {"loss", "grad_norm", "lr"})
        EXPECT_NE(std::find(scalars->datasets.begin(), scalars->datasets.end(), name), scalars->datasets.end())
            << name;
}

TEST(OpenRun, LightningLogFolderReadsTheLatestVersion)
{
    NANSCOPE_REQUIRE_REAL_LOG(realLog("0729max0729__PINNforEM__csvlogger-nan-step218/metrics.csv"));
    ScratchFolder root;
    const fs::path logs = fs::path(root.path()) / "lightning_logs";
    linkInto(realLog("0Xero7__slm_training__csvlogger-healthy/metrics.csv"), logs / "version_9" / "metrics.csv");
    linkInto(realLog("0729max0729__PINNforEM__csvlogger-nan-step218/metrics.csv"), logs / "version_10" / "metrics.csv");
    auto run = openRun(root.path());
    ASSERT_TRUE(run.ok()) << run.error();
    const RunInfo& info = (*run)->info();
    EXPECT_NE(info.source.format.find("Lightning"), std::string::npos);
    EXPECT_NE(info.logPath.find("version_10"), std::string::npos) << info.logPath;
    bool noted = false;
    for (const auto& note : info.source.notes)
        noted = noted || note.find("older metrics.csv") != std::string::npos;
    EXPECT_TRUE(noted);
}

// A DeepSpeed log shows its loss-scale history and its skipped steps; its loss scale is never
// mistaken for a training loss (the name holds "loss").
TEST(OpenRun, DeepSpeedLogShowsTheLossScaleHistory)
{
    const std::string folder = realLog("microsoft__DeepSpeedExamples__dschat-rm-loss-scale-cascade");
    NANSCOPE_REQUIRE_REAL_LOG(folder);
    auto run = openRun(folder);
    ASSERT_TRUE(run.ok()) << run.error();
    const TableInfo* scalars = (*run)->table(runformat::kScalars);
    ASSERT_NE(scalars, nullptr);
    EXPECT_EQ(scalars->datasets, std::vector<std::string>{"loss_scale"});
    const auto scale = (*run)->readSeries(runformat::kScalars, "loss_scale");
    ASSERT_TRUE(scale.ok());
    EXPECT_DOUBLE_EQ(*std::min_element(scale->begin(), scale->end()), 8.0); // SOURCE.md: the dip to 8
    auto kinds = (*run)->readStrings(runformat::kEvents, "kind");
    ASSERT_TRUE(kinds.ok());
    EXPECT_EQ(std::count(kinds->begin(), kinds->end(), "skipped_step"), 20); // SOURCE.md: skipped 20/1840
}

TEST(OpenRun, AFolderWithNothingReadableSaysWhatWasLookedFor)
{
    ScratchFolder empty;
    empty.write("notes.md", "# nothing to see\n");
    auto run = openRun(empty.path());
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.error().find(empty.path()), std::string::npos) << run.error();
    for (const char* looked : {"run.h5", "Trainer", "TensorBoard", "W&B run file", "JSON-lines", "CSV"})
        EXPECT_NE(run.error().find(looked), std::string::npos) << looked << "\n" << run.error();
    EXPECT_NE(run.error().find("notes.md: documentation (.md)"), std::string::npos) << run.error();
    EXPECT_FALSE(openRun(empty.path() + "/missing").ok());
}

TEST(OpenRun, ANanscopeRunDirectoryIsStillReadAsRunH5)
{
    ScratchFolder folder;
    const std::string dir = folder.path() + "/run";
    {
        auto writer = RunWriter::create(dir, RunSchema{});
        ASSERT_TRUE(writer.ok()) << writer.error();
        ASSERT_TRUE((*writer)->appendScalars(1, {{"loss", 1.0}}));
        ASSERT_TRUE((*writer)->close());
    }
    auto run = openRun(dir);
    ASSERT_TRUE(run.ok()) << run.error();
    EXPECT_EQ((*run)->info().source.format, runformat::kNativeSourceFormat);
    EXPECT_TRUE(sourceSummary((*run)->info()).empty());
}

TEST(OpenRun, OpeningAndScanningWritesNothingIntoTheFolder)
{
    NANSCOPE_REQUIRE_REAL_LOG(realLog(kHealthyState));
    ScratchFolder out;
    fs::copy_file(realLog(kHealthyState), fs::path(out.path()) / "trainer_state.json");
    const auto before = listing(out.path());
    auto run = openRun(out.path());
    ASSERT_TRUE(run.ok()) << run.error();
    ASSERT_TRUE(scanRun(**run).ok());
    EXPECT_EQ(listing(out.path()), before);
}

} // namespace
} // namespace nanscope
