// The trackers' folders people keep next to their runs (core/importers/TrackerFolderReader.h), from
// files of real public repositories, verbatim, each with where it was read:
//
// [mlflow-swahili] 10-Academy-Batch-4-Week-4/Swahili-Speech-To-Text at
//   74e20e9632d263b73b22c847ae20af0e2a75c6da: mlruns/1/ed05f9cd599442fe9a0c9222184710b8/metrics/loss
//   (the whole file) and that run's meta.yaml (its start_time and keys, shortened).
// [mlflow-packt] PacktPublishing/Hyperparameter-Tuning-with-Python at
//   a6e779308b0ee500b396b97e4105bd23c8929d5e: mlruns/6/a3112407148b4966b929bc9f8784a3d3/metrics/foo.
// [wandb-old] AGKhalil/RL_implements at 6bf9aa0e1582a61c8028ecb8e42316b48f5af7e7:
//   wandb/run-20200328_192211-44k742bn/wandb-history.jsonl (lines of steps 0, 1, 2, 8 and 9), as
//   the W&B SDK before 0.10 wrote it; later SDKs keep the history only in the binary
//   run-<id>.wandb (wandb/wandb issue #1357), as aorvieto/VerySimpleTransformer's
//   wandb/latest-run/ shows (files/output.log, files/wandb-summary.json, run-5pppfjv9.wandb).
//
// The NaN values of the last MLflow test are ours, written as MLflow's FileStore writes a value
// (Python's str(): "nan"); no real metric file with one was found.

#include "LogFileTestSupport.h"

#include "core/open/OpenRun.h"
#include "core/importers/TrackerFolderReader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace nanscope;
namespace fs = std::filesystem;

namespace {

const char* kSwahiliLoss = R"(1628697792090 332.6841735839844 0
1628697795789 297.6000061035156 1
1628697799319 270.32366943359375 2
1628697803121 248.3108367919922 3
1628697806972 239.03318786621094 4
1628697810423 238.0267791748047 5
1628697813877 235.6751708984375 6
1628697817574 235.4126739501953 7
1628697823629 235.13304138183594 8
1628697827236 234.7978057861328 9
)";

const char* kSwahiliMeta = R"(end_time: 1628697851678
entry_point_name: ''
experiment_id: '1'
lifecycle_stage: active
name: ''
run_id: ed05f9cd599442fe9a0c9222184710b8
run_uuid: ed05f9cd599442fe9a0c9222184710b8
source_type: 4
start_time: 1628697775478
status: 3
tags: []
)";

std::string write(const std::string& path, const std::string& text)
{
    fs::create_directories(fs::path(path).parent_path());
    test::writeBytes(path, text);
    return path;
}

std::string mlflowRun(const test::TempFolder& folder, const std::string& relative, const std::string& meta)
{
    const std::string run = folder.file(relative);
    write(run + "/meta.yaml", meta);
    return run;
}

const TableInfo* scalars(const RunSource& run)
{
    return run.info().table("scalars");
}

} // namespace

TEST(TrackerFolderReader, AnMlflowRunFolderIsARunWithItsStepsAndWallTimes)
{
    test::TempFolder folder;
    const std::string run = mlflowRun(folder, "mlruns/1/ed05f9cd599442fe9a0c9222184710b8", kSwahiliMeta);
    write(run + "/metrics/loss", kSwahiliLoss);
    ASSERT_TRUE(isMlflowRunFolder(run));
    EXPECT_EQ(mlflowRunStartTime(run), 1628697775478);
    auto log = readMlflowRun(run);
    ASSERT_TRUE(log) << log.error();
    const auto& loss = log->series.at("loss");
    ASSERT_EQ(loss.size(), 10u);
    EXPECT_EQ(loss[0].step, 0);
    EXPECT_DOUBLE_EQ(loss[0].value, 332.6841735839844);
    EXPECT_DOUBLE_EQ(loss[9].wallTime, 1628697827.236) << "milliseconds, read as seconds";
    auto opened = openRun(run);
    ASSERT_TRUE(opened) << opened.error();
    ASSERT_NE(scalars(**opened), nullptr);
    EXPECT_EQ(scalars(**opened)->rows, 10);
}

TEST(TrackerFolderReader, AStoreOfSeveralRunsReadsTheLatestAndNamesTheOthers)
{
    test::TempFolder folder;
    const std::string older = mlflowRun(folder, "mlruns/1/ed05f9cd599442fe9a0c9222184710b8", kSwahiliMeta);
    write(older + "/metrics/loss", kSwahiliLoss);
    const std::string newer =
        mlflowRun(folder, "mlruns/6/a3112407148b4966b929bc9f8784a3d3", "experiment_id: '6'\nstart_time: 1656994881000\n");
    write(newer + "/metrics/foo", "1656994881659 0.5957562753945062 1\n1656994881689 1.373249995906063 2\n"
                                  "1656994881718 2.2922696453675444 3\n");
    write(newer + "/metrics/train/loss", "1656994881659 2.5 1\n1656994881689 2.25 2\n1656994881718 2.0 3\n");
    const FoundLogs found = findLogs(folder.file("mlruns"));
    ASSERT_EQ(found.mlflowRuns.size(), 1u);
    EXPECT_EQ(found.mlflowRuns[0], newer) << "the latest start_time";
    ASSERT_FALSE(found.notes.empty());
    EXPECT_NE(found.notes.back().find("2 MLflow runs"), std::string::npos) << found.notes.back();
    auto log = readMlflowRun(newer);
    ASSERT_TRUE(log) << log.error();
    EXPECT_EQ(log->series.count("train/loss"), 1u) << "a metric named with a slash is a nested file";
    EXPECT_EQ(log->series.at("foo")[2].step, 3);
}

TEST(TrackerFolderReader, NaNInAMetricFileIsDataAndBrokenLinesAreSaid)
{
    test::TempFolder folder;
    const std::string run = mlflowRun(folder, "run", kSwahiliMeta);
    write(run + "/metrics/loss", kSwahiliLoss);
    write(run + "/metrics/val_auc", "1628697792090 0.5 0\n1628697799319 nan 2\n1628697806972 nan 4\nnot a line\n"
                                    "1628697810423 0.7\n");
    auto log = readMlflowRun(run);
    ASSERT_TRUE(log) << log.error();
    const auto& auc = log->series.at("val_auc");
    ASSERT_EQ(auc.size(), 4u);
    EXPECT_TRUE(std::isnan(auc[1].value));
    EXPECT_EQ(auc[3].step, 0) << "a line without a step is step 0, as MLflow reads it";
    ASSERT_EQ(log->warnings.size(), 1u);
    EXPECT_NE(log->warnings[0].find("val_auc: 1 lines"), std::string::npos) << log->warnings[0];
}

TEST(TrackerFolderReader, AnOldWandbHistoryIsReadWithItsStepsAndTimes)
{
    test::TempFolder folder;
    const std::string history = write(folder.file("wandb/run-20200328_192211-44k742bn/wandb-history.jsonl"),
        R"({"Episode reward": -99.24923027564873, "Episode length": 999, "Policy Loss": -0.13316528499126434, "Value Loss": 0.03027436137199402, "_runtime": 181.45505452156067, "_timestamp": 1585423347.4016836, "_step": 0}
{"Episode reward": -77.01192574449038, "Episode length": 932, "Policy Loss": -0.04313929006457329, "Value Loss": 14.340085983276367, "_runtime": 183.0248668193817, "_timestamp": 1585423348.9714959, "_step": 1}
{"Episode reward": -197.01424177948653, "Episode length": 999, "Policy Loss": -0.2232600301504135, "Value Loss": 0.08697383850812912, "_runtime": 184.63667178153992, "_timestamp": 1585423350.5833008, "_step": 2}
{"Episode reward": -208.15067670685147, "Episode length": 999, "Policy Loss": -0.2761170268058777, "Value Loss": 0.12767191231250763, "_runtime": 194.1857385635376, "_timestamp": 1585423360.1323676, "_step": 8}
{"Episode reward": -198.26398420927248, "Episode length": 999, "Policy Loss": -0.2635950446128845, "Value Loss": 0.09890662878751755, "_runtime": 194.1857385635376, "_timestamp": 1585423360.1323676, "_step": 9}
)");
    auto log = readWandbHistory(history);
    ASSERT_TRUE(log) << log.error();
    const auto& value = log->series.at("Value Loss");
    ASSERT_EQ(value.size(), 5u);
    EXPECT_EQ(value[3].step, 8);
    EXPECT_DOUBLE_EQ(value[1].value, 14.340085983276367);
    EXPECT_DOUBLE_EQ(value[4].wallTime, 1585423360.1323676);
    EXPECT_EQ(log->series.count("_runtime"), 0u) << "the SDK's own keys are not metrics";
    const FoundLogs found = findLogs(folder.file("wandb"));
    ASSERT_EQ(found.wandbHistories.size(), 1u);
    auto opened = openRun(folder.file("wandb"));
    ASSERT_TRUE(opened) << opened.error();
}

// A W&B run file that lost its header is named, with why; the summary beside it is no log of steps.
TEST(TrackerFolderReader, AWandbFolderWithADamagedRunFileNamesTheFileAndWhy)
{
    test::TempFolder folder;
    const std::string run = folder.file("wandb/latest-run");
    write(run + "/run-5pppfjv9.wandb", std::string("\x00\x01\x02", 3));
    write(run + "/files/wandb-summary.json",
          R"({"lr": 3e-06, "train_loss_local": 0.17600448429584503, "grad_norm_square": 40.52313010597746, "_timestamp": 1680093787.523575, "_runtime": 2621.788069009781, "_step": 62509, "train_loss_epoch": 0.300126399408728, "test_acc_epoch": 0.7808, "_wandb": {"runtime": 2620}})");
    auto opened = openRun(run);
    ASSERT_FALSE(opened);
    EXPECT_NE(opened.error().find("run-5pppfjv9.wandb: no :W&B header: damaged, or not a W&B run file"),
              std::string::npos)
        << opened.error();
    EXPECT_NE(opened.error().find("wandb-summary.json: one JSON object"), std::string::npos) << opened.error();
}
