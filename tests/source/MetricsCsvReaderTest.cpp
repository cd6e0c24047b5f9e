#include "core/importers/MetricsCsvReader.h"

#include "SourceTestSupport.h"

#include <cmath>

using namespace nanscope;
using namespace nanscope::testing;

namespace {

ScalarLog readOrFail(const std::string& path)
{
    Result<ScalarLog> log = readMetricsCsv(path);
    EXPECT_TRUE(log.ok()) << log.error();
    return log.ok() ? std::move(log).value() : ScalarLog {};
}

std::string warningsOf(const ScalarLog& log)
{
    return ::testing::PrintToString(log.warnings);
}

} // namespace

// SOURCE.md: 262 rows, steps 0..261; step 217 the best row (Conductor 0.814, mean_loss 1.043); from
// step 218 to 261 (44 rows) every loss column is "nan". hparams.yaml is "{}".
TEST(MetricsCsvReader, NanFromStep218InEveryLossColumn)
{
    const std::string path = realLog("0729max0729__PINNforEM__csvlogger-nan-step218/metrics.csv");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(log.format, kMetricsCsvFormat);
    for (const char* name : { "Conductor_Copper_loss", "Dielectric_Air_loss", "initial_phi_port_port1_loss",
             "initial_phi_port_port2_loss", "mean_loss" }) {
        ASSERT_EQ(pointCount(log, name), 262u) << name;
        EXPECT_TRUE(std::isfinite(valueAt(log, name, 217))) << name;
        EXPECT_TRUE(std::isnan(valueAt(log, name, 218))) << name;
        const std::vector<ScalarPoint>& points = log.series.at(name);
        const auto nanCount = std::count_if(
            points.begin(), points.end(), [](const ScalarPoint& point) { return std::isnan(point.value); });
        EXPECT_EQ(nanCount, 44) << name;
        EXPECT_EQ(points.back().step, 261) << name;
    }
    EXPECT_NEAR(valueAt(log, "Conductor_Copper_loss", 217), 0.814, 0.0005);
    EXPECT_NEAR(valueAt(log, "mean_loss", 217), 1.043, 0.0005);
    EXPECT_NEAR(valueAt(log, "Conductor_Copper_loss", 0), 1.15e13, 0.005e13); // 13 orders above the end
    EXPECT_EQ(log.series.count("step"), 0u);
    EXPECT_EQ(pointCount(log, "epoch"), 262u);
    EXPECT_TRUE(log.warnings.empty()) << warningsOf(log);
    EXPECT_TRUE(log.attributes.empty());
}

// SOURCE.md: 2834 rows, sparse; train_loss_step 2814 points at steps 49..140699, val_loss 10 points
// (4.13 -> 3.57). No nan/inf.
TEST(MetricsCsvReader, SparseColumnsGiveOnePointPerFilledCell)
{
    const std::string path = realLog("0Xero7__slm_training__csvlogger-healthy/metrics.csv");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(pointCount(log, "train_loss_step"), 2814u);
    EXPECT_EQ(pointCount(log, "train_perplexity_step"), 2814u);
    EXPECT_EQ(pointCount(log, "val_loss"), 10u);
    EXPECT_EQ(pointCount(log, "train_loss_epoch"), 10u);
    EXPECT_EQ(log.series.at("train_loss_step").front().step, 49);
    EXPECT_EQ(log.series.at("train_loss_step").back().step, 140699);
    EXPECT_NEAR(log.series.at("val_loss").front().value, 4.13, 0.005);
    EXPECT_NEAR(log.series.at("val_loss").back().value, 3.57, 0.005);
    for (const auto& [name, points] : log.series)
        for (const ScalarPoint& point : points)
            ASSERT_TRUE(std::isfinite(point.value)) << name << " at " << point.step;
    EXPECT_TRUE(log.warnings.empty()) << warningsOf(log);
    EXPECT_TRUE(log.notes.empty()) << ::testing::PrintToString(log.notes);
}

// SOURCE.md: 200 rows, steps 198, 397, 596, ...; data_loss and mean_loss "nan" in every row.
TEST(MetricsCsvReader, AllNanColumnsStillHaveTheirPoints)
{
    const std::string path = realLog("BesT1CooKie1__nn_oedometer__all-nan-csv-and-tfevents/metrics.csv");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    for (const char* name : { "data_loss", "mean_loss" }) {
        ASSERT_EQ(pointCount(log, name), 200u) << name;
        EXPECT_EQ(log.series.at(name).front().step, 198);
        EXPECT_EQ(log.series.at(name)[2].step, 596);
        for (const ScalarPoint& point : log.series.at(name))
            EXPECT_TRUE(std::isnan(point.value));
    }
    EXPECT_FALSE(log.empty());
}

TEST(MetricsCsvReader, NonFiniteSpellingsAreDataAndTextIsSkippedWithAWarning)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv",
        "epoch,loss,\"val/acc,top1\",step\n"
        "0,nan,,0\n"
        "0,NaN,0.5,1\n"
        "0,inf,,2\n"
        "0,-inf,,3\n"
        "0,Infinity,,4\n"
        "0,tensor(0.3),,5\n"
        "0, 0.25 ,,6\n");
    const ScalarLog log = readOrFail(path);
    ASSERT_EQ(pointCount(log, "loss"), 6u);
    EXPECT_TRUE(std::isnan(valueAt(log, "loss", 0)));
    EXPECT_TRUE(std::isnan(valueAt(log, "loss", 1)));
    EXPECT_EQ(valueAt(log, "loss", 2), INFINITY);
    EXPECT_EQ(valueAt(log, "loss", 3), -INFINITY);
    EXPECT_EQ(valueAt(log, "loss", 4), INFINITY);
    EXPECT_EQ(pointAt(log, "loss", 5), nullptr);
    EXPECT_EQ(valueAt(log, "loss", 6), 0.25);
    ASSERT_EQ(pointCount(log, "val/acc,top1"), 1u); // an empty cell is no point
    EXPECT_EQ(valueAt(log, "val/acc,top1", 1), 0.5);
    ASSERT_EQ(log.warnings.size(), 1u) << warningsOf(log);
    EXPECT_EQ(log.warnings[0].rfind(path + ": column \"loss\" (column 2): 1 cell is not a number (line 7;", 0), 0u)
        << log.warnings[0];
}

TEST(MetricsCsvReader, RaggedRowsAreNamedAndReadAsDocumented)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv",
        "step,loss,lr\n"
        "1,0.9,0.1\n"
        "2,0.8\n"
        "3,0.7,0.1,junk\n"
        "4,0.6,0.1\n"
        "5,0.5,0.12345");
    ScalarLog log = readOrFail(path);
    // Line 3 is short: its fields are read. Line 4 is long: skipped. The last line has no line
    // break: "0.12345" may have been longer when written, so it is not used.
    EXPECT_EQ(valueAt(log, "loss", 2), 0.8);
    EXPECT_EQ(pointAt(log, "lr", 2), nullptr);
    EXPECT_EQ(pointAt(log, "loss", 3), nullptr);
    EXPECT_EQ(valueAt(log, "lr", 4), 0.1);
    EXPECT_EQ(valueAt(log, "loss", 5), 0.5);
    EXPECT_EQ(pointAt(log, "lr", 5), nullptr);
    ASSERT_EQ(log.warnings.size(), 3u) << warningsOf(log);
    EXPECT_EQ(log.warnings[0].rfind(path + ": line 3: 2 fields where the header has 3;", 0), 0u) << log.warnings[0];
    EXPECT_EQ(log.warnings[1].rfind(path + ": line 4: 4 fields where the header has 3; the row is skipped", 0), 0u)
        << log.warnings[1];
    EXPECT_EQ(log.warnings[2].rfind(path + ": line 6: the file ends inside this row", 0), 0u) << log.warnings[2];

    // Cut inside the last row: its fields but the cut one are read.
    const std::string cutPath = scratch.write("cut.csv", "loss,lr,step\n0.9,0.1,1\n0.8,0.1,2\n0.71,0.0");
    log = readOrFail(cutPath);
    EXPECT_EQ(pointCount(log, "loss"), 2u);
    EXPECT_EQ(pointCount(log, "lr"), 2u);
    ASSERT_EQ(log.warnings.size(), 1u) << warningsOf(log);
    EXPECT_NE(log.warnings[0].find("line 4: the file ends inside this row (2 fields where the header has 3)"),
        std::string::npos)
        << log.warnings[0];
}

TEST(MetricsCsvReader, StepsCountedPerEpochAreMadeToContinue)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv",
        "epoch,loss,step\n"
        "0,1.0,0\n0,0.9,1\n0,0.8,2\n"
        "1,0.7,0\n1,0.6,1\n1,0.5,2\n"
        "2,0.4,0\n");
    const ScalarLog log = readOrFail(path);
    const std::vector<ScalarPoint>& loss = log.series.at("loss");
    ASSERT_EQ(loss.size(), 7u);
    for (size_t i = 0; i < loss.size(); ++i)
        EXPECT_EQ(loss[i].step, int64_t(i));
    EXPECT_TRUE(anyContains(log.notes, "starts again in 2 new epochs (first at line 5"))
        << ::testing::PrintToString(log.notes);
}

TEST(MetricsCsvReader, ResumedRunKeepsItsRepeatedSteps)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv",
        "epoch,loss,step\n"
        "0,1.0,10\n0,0.9,20\n0,0.8,30\n"
        "0,0.95,20\n0,0.85,30\n0,0.75,40\n");
    const ScalarLog log = readOrFail(path);
    const std::vector<ScalarPoint>& loss = log.series.at("loss");
    ASSERT_EQ(loss.size(), 6u);
    EXPECT_EQ(loss[3].step, 20);
    EXPECT_EQ(loss[3].value, 0.95);
    EXPECT_TRUE(anyContains(log.notes, "goes back 1 time without a new epoch (first at line 5: step 20 after 30)"))
        << ::testing::PrintToString(log.notes);
}

TEST(MetricsCsvReader, WithoutAStepColumnTheRowIndexIsTheStep)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv", "loss,acc\n0.9,\n0.8,0.5\n");
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(valueAt(log, "loss", 0), 0.9);
    EXPECT_EQ(valueAt(log, "acc", 1), 0.5);
    EXPECT_TRUE(anyContains(log.warnings, path + ": no \"step\" column")) << warningsOf(log);
}

TEST(MetricsCsvReader, HparamsBesideTheFileBecomeAttributes)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("metrics.csv", "step,loss\n0,1.0\n");
    scratch.write("hparams.yaml", "lr: 0.001\nprecision: '16-mixed'\noptimizer:\n  name: adam\n");
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(log.attributes.at("lr"), "0.001");
    EXPECT_EQ(log.attributes.at("precision"), "16-mixed");
    EXPECT_EQ(log.attributes.count("optimizer"), 0u);
    EXPECT_EQ(log.attributes.count("name"), 0u);
}

TEST(MetricsCsvReader, UnreadableFilesAreErrorsNamingThem)
{
    ScratchFolder scratch;
    for (const std::string& path : { scratch.path() + "/absent.csv", scratch.write("empty.csv", ""),
             scratch.write("binary.csv", std::string("step\0\x01\x02", 7)) }) {
        const Result<ScalarLog> log = readMetricsCsv(path);
        ASSERT_FALSE(log.ok()) << path;
        EXPECT_EQ(log.error().rfind(path + ": ", 0), 0u) << log.error();
    }
}

TEST(MetricsCsvReader, OtherTextFilesAreNotReadAsMetrics)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("notes.csv", "# Run notes\nThe loss went up, then down.\n");
    const Result<ScalarLog> log = readMetricsCsv(path);
    ASSERT_FALSE(log.ok());
    EXPECT_EQ(log.error().rfind(path + ": not a Lightning metrics.csv", 0), 0u) << log.error();
}

// A metrics.csv copied while Lightning appended to it: whatever the cut, the rows before it are read
// and nothing after it is made up.
TEST(MetricsCsvReader, CutAnywhereKeepsTheWholeRowsBeforeIt)
{
    const std::string original = realLog("0729max0729__PINNforEM__csvlogger-nan-step218/metrics.csv");
    NANSCOPE_REQUIRE_REAL_LOG(original);
    const std::string bytes = readBytes(original);
    const size_t headerEnd = bytes.find('\n') + 1;
    ScratchFolder scratch;
    for (size_t cut = headerEnd; cut < bytes.size(); cut += 37) {
        const std::string prefix = bytes.substr(0, cut);
        const size_t wholeRows = size_t(std::count(prefix.begin(), prefix.end(), '\n')) - 1;
        const ScalarLog log = readOrFail(scratch.write("cut-" + std::to_string(cut) + ".csv", prefix));
        // step is the last column, so a cut row has no step and is not read.
        ASSERT_EQ(pointCount(log, "mean_loss"), wholeRows) << "cut at byte " << cut;
        if (wholeRows > 0)
            ASSERT_EQ(log.series.at("mean_loss").back().step, int64_t(wholeRows) - 1) << "cut at byte " << cut;
        const bool endsInsideRow = prefix.back() != '\n';
        ASSERT_EQ(log.warnings.size(), endsInsideRow ? 1u : 0u) << "cut at byte " << cut << warningsOf(log);
    }
}
