// readTensorBoardEvents on the real event files of ../shared/real-logs (HF Trainer, Lightning, an
// all-NaN run, a NaN eval loss) and on an event file of TF2 tensors written here.
// TensorBoardDamageTest.cpp: damaged copies.

#include "core/run/StepAxis.h"
#include "core/open/OpenRun.h"
#include "core/importers/TensorBoardReader.h"
#include "LogFileTestSupport.h"
#include "TfEventTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

using namespace nanscope;
using namespace nanscope::test;

namespace {

const char* kHfFolder = "10844110__t5-summarization-demo__trainer-state-and-tfevents";
const char* kLightningFolder = "192cm__Retail-Store-TFT__lightning-tfevents-healthy";

} // namespace

// The HF Trainer wrote the same run to trainer_state.json and to this event file: every logged
// loss and grad norm must agree (the event file holds them as float32).
TEST(TensorBoardReader, HfTrainerFileAgreesWithTrainerState)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kHfFolder);
    const Result<ScalarLog> log = readTensorBoardEvents(fileIn(folder, ".107869.0"));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_EQ(log->format, "TensorBoard event file");
    EXPECT_TRUE(log->warnings.empty());
    for (const char* tag : { "train/loss", "train/grad_norm", "train/learning_rate" }) {
        ASSERT_EQ(log->series.count(tag), 1u) << tag;
        const auto& points = log->series.at(tag);
        ASSERT_EQ(points.size(), 430u) << tag;
        EXPECT_EQ(points.front().step, 500);
        EXPECT_EQ(points.back().step, 215000);
        EXPECT_GT(points.front().wallTime, 1742826235.0) << "wall_time becomes wallTime";
    }
    EXPECT_EQ(log->series.at("train/epoch").size(), 431u);
    ASSERT_EQ(log->series.at("train/train_loss").size(), 1u);
    EXPECT_EQ(log->series.at("train/train_loss")[0].step, 215337);
    // The Trainer's args (text) say how its loss was logged: every 500 steps, so a 0.0 there would be
    // an interval's average, not a hidden NaN. Its model config is the one text left unread.
    EXPECT_EQ(log->attributes.at("args.logging_steps"), "500");
    EXPECT_EQ(log->attributes.at("args.logging_nan_inf_filter"), "true");
    EXPECT_TRUE(hasNote(*log, "1 text summary skipped")) << "the Trainer's model config";
    EXPECT_TRUE(hasNote(*log, "1 file_version record skipped"));

    // log_history entries: {"epoch": .., "grad_norm": .., "learning_rate": .., "loss": .., "step": N}
    const std::string state = readBytes(folder + "/trainer_state.json");
    const std::regex entry(
        R"re("grad_norm": ([0-9.eE+-]+),\s*"learning_rate": [0-9.eE+-]+,\s*"loss": ([0-9.eE+-]+),\s*"step": (\d+))re");
    std::map<int64_t, std::pair<double, double>> fromJson;
    for (auto it = std::sregex_iterator(state.begin(), state.end(), entry); it != std::sregex_iterator(); ++it)
        fromJson[std::stoll((*it)[3])] = { std::stod((*it)[1]), std::stod((*it)[2]) };
    ASSERT_EQ(fromJson.size(), 430u);
    size_t compared = 0;
    for (const ScalarPoint& point : log->series.at("train/loss")) {
        ASSERT_EQ(fromJson.count(point.step), 1u) << point.step;
        EXPECT_NEAR(point.value, fromJson[point.step].second, 1e-6) << "loss at step " << point.step;
        ++compared;
    }
    EXPECT_EQ(compared, 430u);
    for (const ScalarPoint& point : log->series.at("train/grad_norm"))
        EXPECT_NEAR(point.value, fromJson[point.step].first, 1e-5 * fromJson[point.step].first) << point.step;
    // The isolated spike SOURCE.md names: 35.59 at step 190000.
    const auto& gradNorm = log->series.at("train/grad_norm");
    const auto spike = std::max_element(
        gradNorm.begin(), gradNorm.end(), [](const ScalarPoint& a, const ScalarPoint& b) { return a.value < b.value; });
    EXPECT_EQ(spike->step, 190000);
    EXPECT_NEAR(spike->value, 35.5915, 1e-3);
}

TEST(TensorBoardReader, LightningFileSkipsHparamsAndKeepsEveryScalar)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kLightningFolder);
    const Result<ScalarLog> log = readTensorBoardEvents(fileIn(folder, "tfevents"));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_TRUE(log->warnings.empty());
    EXPECT_EQ(totalPoints(*log), 1693u) << "SOURCE.md: 1693 simple_value scalars";
    const auto& steps = log->series.at("train_loss_step");
    ASSERT_EQ(steps.size(), 711u);
    EXPECT_EQ(steps.front().step, 49);
    EXPECT_EQ(steps.back().step, 35549);
    EXPECT_NEAR(steps.front().value, 0.168, 1e-3);
    for (const char* tag :
        { "lr-Adam", "val_loss", "val_SMAPE", "val_MAE", "val_RMSE", "val_MAPE", "train_loss_epoch" })
        EXPECT_EQ(log->series.at(tag).size(), 30u) << tag;
    EXPECT_NEAR(log->series.at("lr-Adam").front().value, 0.03, 1e-7);
    EXPECT_TRUE(hasNote(*log, "3 hparams records skipped"));
    EXPECT_TRUE(hasNote(*log, "1 file_version record skipped"));
}

TEST(TensorBoardReader, NaNValuesAreData)
{
    NANSCOPE_REAL_LOG_OR_SKIP(allNan, "BesT1CooKie1__nn_oedometer__all-nan-csv-and-tfevents");
    const Result<ScalarLog> log = readTensorBoardEvents(fileIn(allNan, "tfevents"));
    ASSERT_TRUE(log.ok()) << log.error();
    for (const char* tag : { "data_loss", "mean_loss" }) {
        const auto& points = log->series.at(tag);
        ASSERT_EQ(points.size(), 1000u);
        EXPECT_EQ(points.front().step, 49);
        EXPECT_EQ(points.back().step, 49999);
        EXPECT_TRUE(
            std::all_of(points.begin(), points.end(), [](const ScalarPoint& p) { return std::isnan(p.value); }));
    }
    EXPECT_DOUBLE_EQ(log->series.at("epoch").back().value, 999.0);

    NANSCOPE_REAL_LOG_OR_SKIP(evalNan, "jr7072__adl_hw3__eval-loss-nan");
    const Result<ScalarLog> eval = readTensorBoardEvents(fileIn(evalNan, "tfevents"));
    ASSERT_TRUE(eval.ok()) << eval.error();
    const auto& evalLoss = eval->series.at("eval/loss");
    ASSERT_EQ(evalLoss.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(evalLoss[i].step, int64_t(16 * (i + 1)));
        EXPECT_TRUE(std::isnan(evalLoss[i].value));
    }
    EXPECT_NEAR(eval->series.at("train/train_loss").at(0).value, 1.5760, 1e-4);
    EXPECT_EQ(eval->series.count("train/loss"), 0u) << "the run logged no train loss";
}

TEST(TensorBoardReader, Tf2TensorsHistogramsAndSkippedKinds)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    std::string file = tfRecord(Proto().float64(1, 1700000000.0).blob(3, "brain.Event:2").bytes);
    // TF2 scalar: plugin "scalars", a 0-d DT_FLOAT tensor in float_val.
    const float f = 0.25f;
    file += summaryEvent(1,
        Proto()
            .blob(1, "loss")
            .message(9, pluginMetadata("scalars"))
            .message(8,
                Proto().varint(1, 1).message(2, shape({})).blob(5, std::string(reinterpret_cast<const char*>(&f), 4))));
    // A 0-d DT_DOUBLE tensor in tensor_content, no metadata.
    const double d = 1.5;
    file += summaryEvent(2,
        Proto().blob(1, "loss").message(
            8, Proto().varint(1, 2).blob(4, std::string(reinterpret_cast<const char*>(&d), 8))));
    // A DT_HALF scalar: 0x3C00 is 1.0.
    file += summaryEvent(
        3, Proto().blob(1, "half").message(8, Proto().varint(1, 19).blob(13, std::string("\x80\x78", 2))));
    // TF1 histogram.
    file += summaryEvent(4,
        Proto()
            .blob(1, "weights")
            .message(5, Proto().float64(1, -2).float64(2, 3).float64(3, 10).float64(4, 5).float64(5, 30)));
    // TF2 histogram [3, 3]: the first bucket is empty; its metadata only on the first value of the tag.
    file += summaryEvent(5,
        Proto()
            .blob(1, "acts")
            .message(9, pluginMetadata("histograms"))
            .message(
                8, Proto().varint(1, 2).message(2, shape({ 3, 3 })).packedDoubles(6, { 0, 1, 0, 1, 2, 4, 2, 3, 6 })));
    file += summaryEvent(6,
        Proto().blob(1, "acts").message(
            8, Proto().varint(1, 2).message(2, shape({ 1, 3 })).packedDoubles(6, { 5, 7, 2 })));
    // Things to skip: an image, a text tensor, an hparams record without value, a graph, a session log.
    file += summaryEvent(7, Proto().blob(1, "sample").message(4, Proto().varint(1, 8).varint(2, 8)));
    file += summaryEvent(8,
        Proto().blob(1, "notes").message(9, pluginMetadata("text")).message(8, Proto().varint(1, 7).blob(8, "hello")));
    file += summaryEvent(9, Proto().blob(1, "_hparams_/experiment").message(9, pluginMetadata("hparams")));
    file += tfRecord(Proto().float64(1, 1).blob(4, "graph bytes").bytes);
    file += tfRecord(Proto().float64(1, 1).message(7, Proto().varint(1, 1)).bytes);
    const std::string path = temp.file("events.out.tfevents.synthetic");
    writeBytes(path, file);

    const Result<ScalarLog> log = readTensorBoardEvents(path);
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_TRUE(log->warnings.empty());
    const auto& loss = log->series.at("loss");
    ASSERT_EQ(loss.size(), 2u);
    EXPECT_DOUBLE_EQ(loss[0].value, 0.25);
    EXPECT_DOUBLE_EQ(loss[1].value, 1.5);
    EXPECT_DOUBLE_EQ(loss[1].wallTime, 1700000002.0);
    ASSERT_EQ(log->series.count("half"), 1u);
    EXPECT_DOUBLE_EQ(log->series.at("half")[0].value, 1.0) << "half bits 0x3C00";

    const HistogramPoint& tf1 = log->histograms.at("weights").at(0);
    EXPECT_EQ(tf1.step, 4);
    EXPECT_DOUBLE_EQ(tf1.min, -2);
    EXPECT_DOUBLE_EQ(tf1.max, 3);
    EXPECT_DOUBLE_EQ(tf1.count, 10);
    EXPECT_DOUBLE_EQ(tf1.sumSquares, 30);
    const auto& acts = log->histograms.at("acts");
    ASSERT_EQ(acts.size(), 2u) << "the second value relies on the first one's plugin";
    EXPECT_DOUBLE_EQ(acts[0].min, 1) << "the left edge of the first non-empty bucket";
    EXPECT_DOUBLE_EQ(acts[0].max, 3);
    EXPECT_DOUBLE_EQ(acts[0].count, 10);
    EXPECT_DOUBLE_EQ(acts[1].min, 5);
    EXPECT_DOUBLE_EQ(acts[1].count, 2);

    for (const char* note : { "1 file_version record skipped", "1 image summary skipped", "1 text summary skipped",
             "1 hparams record skipped", "1 graph record skipped", "1 session log record skipped" })
        EXPECT_TRUE(hasNote(*log, note)) << note;
}

// The times and epochs these logs hold become x axes of the window: Lightning's event file has
// both, the Trainer folder's times come from its event files (trainer_state.json has none).
TEST(TensorBoardReader, RealLogsGiveWallTimeAndEpochAxes)
{
    NANSCOPE_REAL_LOG_OR_SKIP(lightning, kLightningFolder);
    auto run = openRun(lightning);
    ASSERT_TRUE(run.ok()) << run.error();
    auto axes = readStepAxes(**run);
    ASSERT_TRUE(axes.ok()) << axes.error();
    ASSERT_TRUE(axes->wallTime);
    ASSERT_TRUE(axes->epoch);
    EXPECT_DOUBLE_EQ(axes->epoch->firstValue(), 0.0);
    EXPECT_DOUBLE_EQ(axes->epoch->lastValue(), 29.0) << "30 epochs, logged once each";
    EXPECT_GT(axes->wallTime->lastValue() - axes->wallTime->firstValue(), 1.0);
    EXPECT_GT(axes->wallTime->firstValue(), 1770885861.0 - 60) << "the file was written then";

    NANSCOPE_REAL_LOG_OR_SKIP(trainer, kHfFolder);
    auto hf = openRun(trainer);
    ASSERT_TRUE(hf.ok()) << hf.error();
    auto hfAxes = readStepAxes(**hf);
    ASSERT_TRUE(hfAxes.ok()) << hfAxes.error();
    ASSERT_TRUE(hfAxes->wallTime) << "the event files stamp the training steps";
    ASSERT_TRUE(hfAxes->epoch);
    EXPECT_GT(hfAxes->epoch->lastValue(), hfAxes->epoch->firstValue());
}
