// readTrainingTextLog on the two DeepSpeed-Chat logs of ../shared/real-logs (the overflow counts,
// steps and loss-scale sequence their SOURCE.md describes) and on Megatron-LM, DeepSpeed-Chat loss
// and damaged logs written here.

#include "core/importers/TrainingTextLogReader.h"
#include "LogFileTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

using namespace nanscope;
using namespace nanscope::test;

namespace {

const char* kRewardFolder = "microsoft__DeepSpeedExamples__dschat-rm-loss-scale-cascade";
const char* kSftFolder = "microsoft__DeepSpeedExamples__dschat-sft-overflow-hysteresis";

std::vector<LoggedEvent> eventsOf(const ScalarLog& log, const std::string& kind)
{
    std::vector<LoggedEvent> found;
    std::copy_if(log.events.begin(), log.events.end(), std::back_inserter(found),
        [&](const LoggedEvent& event) { return event.kind == kind; });
    return found;
}

bool anyContains(const std::vector<std::string>& texts, const std::string& part)
{
    return std::any_of(
        texts.begin(), texts.end(), [&](const std::string& text) { return text.find(part) != std::string::npos; });
}

double valueAt(const ScalarLog& log, const std::string& name, int64_t step)
{
    for (const ScalarPoint& point : log.series.at(name))
        if (point.step == step)
            return point.value;
    ADD_FAILURE() << name << " has no point at step " << step;
    return 0;
}

// Every "step=N, skipped=K" report (the skipped_total series) must see exactly K skipped_step
// events at or before step N: each overflow is in the right 10-step window.
void expectEventsAgreeWithSkippedCounter(const ScalarLog& log)
{
    const std::vector<LoggedEvent> skips = eventsOf(log, "skipped_step");
    for (const ScalarPoint& report : log.series.at("skipped_total")) {
        const auto upTo
            = std::count_if(skips.begin(), skips.end(), [&](const LoggedEvent& e) { return e.step <= report.step; });
        ASSERT_EQ(double(upTo), report.value) << "step=" << report.step;
    }
}

std::string writeLog(const TempFolder& temp, const std::string& name, const std::string& text)
{
    const std::string path = temp.file(name);
    writeBytes(path, text);
    return path;
}

} // namespace

// SOURCE.md: 20 skips; 65536 -> 64 in steps 1-10, then (140,150] 128->64, (480,490] 512->256->128->64,
// (550,560] 64->32->16, (560,570] 16->8, (1540,1550] 4096->2048, (1610,1620] and (1720,1730] 2048->1024.
TEST(TrainingTextLogReader, RewardModelLossScaleCascade)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kRewardFolder);
    const std::string path = fileIn(folder, ".log");
    EXPECT_TRUE(looksLikeTrainingTextLog(path));
    const Result<ScalarLog> log = readTrainingTextLog(path);
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_EQ(log->format, "DeepSpeed log");
    EXPECT_TRUE(log->warnings.empty()) << log->warnings.front();
    EXPECT_EQ(eventsOf(*log, "skipped_step").size(), 20u);

    std::ostringstream decreases;
    for (const LoggedEvent& event : eventsOf(*log, "loss_scale_decrease"))
        decreases << event.step << ":" << event.message << ";";
    std::ostringstream expected;
    double scale = 65536;
    for (int step = 1; step <= 10; ++step, scale /= 2)
        expected << step << ":loss scale " << scale << " -> " << scale / 2 << ";";
    // The fused optimizer's "Grad overflow on iteration I" lines give these steps exactly (I + 1).
    expected << "146:loss scale 128 -> 64;483:loss scale 512 -> 256;486:loss scale 256 -> 128;487:loss scale 128 -> 64;"
                "558:loss scale 64 -> 32;559:loss scale 32 -> 16;566:loss scale 16 -> 8;1542:loss scale 4096 -> 2048;"
                "1615:loss scale 2048 -> 1024;1725:loss scale 2048 -> 1024;";
    EXPECT_EQ(decreases.str(), expected.str());
    expectEventsAgreeWithSkippedCounter(*log);

    // The loss-scale history: the cascade, the regrowth every 100 clean steps, the dip to 8.
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss_scale", 10), 64);
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss_scale", 111), 128) << "first regrowth: 100 steps after step 10";
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss_scale", 566), 8);
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss_scale", 1467), 4096);
    EXPECT_DOUBLE_EQ(log->series.at("loss_scale").back().value, 2048);
    const auto& lowest = *std::min_element(log->series.at("loss_scale").begin(), log->series.at("loss_scale").end(),
        [](const ScalarPoint& a, const ScalarPoint& b) { return a.value < b.value; });
    EXPECT_EQ(lowest.step, 566);
    EXPECT_TRUE(anyContains(
        log->notes, "steps 1-10 were all skipped while the fp16 loss scale searched down from 65536 to 64"));

    EXPECT_EQ(log->series.at("lr").size(), 184u);
    EXPECT_DOUBLE_EQ(log->series.at("skipped_total").back().value, 20);
    EXPECT_NEAR(valueAt(*log, "acc", 0), 0.4924, 1e-4) << "reward accuracy before training";
    EXPECT_NEAR(valueAt(*log, "acc", 1840), 0.6995, 1e-4);
    EXPECT_NEAR(valueAt(*log, "epoch_loss", 1840), 0.5755, 1e-4);
    EXPECT_EQ(log->attributes.at("amp_dtype"), "float16");
}

// Without the fused optimizer's iteration lines, the time stamps must place the overflows on the
// same steps (the estimate, checked against the exact answer).
TEST(TrainingTextLogReader, TimeStampEstimateMatchesTheExactSteps)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kRewardFolder);
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    std::istringstream original(readBytes(fileIn(folder, ".log")));
    std::string stripped, line;
    while (std::getline(original, line))
        if (line.find("Grad overflow on iteration") == std::string::npos)
            stripped += line + "\n";
    const Result<ScalarLog> exact = readTrainingTextLog(fileIn(folder, ".log"));
    const Result<ScalarLog> estimated = readTrainingTextLog(writeLog(temp, "no-iterations.log", stripped));
    ASSERT_TRUE(exact.ok() && estimated.ok());
    const auto exactSkips = eventsOf(*exact, "skipped_step"), estimatedSkips = eventsOf(*estimated, "skipped_step");
    ASSERT_EQ(estimatedSkips.size(), exactSkips.size());
    for (size_t i = 0; i < exactSkips.size(); ++i) {
        EXPECT_EQ(estimatedSkips[i].step, exactSkips[i].step) << i;
        EXPECT_NE(estimatedSkips[i].message.find("estimated"), std::string::npos) << "the message says so";
    }
    EXPECT_TRUE(anyContains(estimated->notes, "estimated"));
}

// SOURCE.md: 139 skips; steps 1-10: 6 (hysteresis, then 65536 -> 2048); afterwards a hysteresis
// skip plus a 65536 -> 32768 skip every ~100 steps (probing, harmless). The log also holds one
// 32768 -> 16384 (line 1060, step=4690 window), which SOURCE.md's summary leaves out.
TEST(TrainingTextLogReader, SftOverflowHysteresis)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kSftFolder);
    const Result<ScalarLog> log = readTrainingTextLog(fileIn(folder, ".log"));
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_TRUE(log->warnings.empty()) << log->warnings.front();
    const auto skips = eventsOf(*log, "skipped_step");
    EXPECT_EQ(skips.size(), 139u);
    EXPECT_EQ(std::count_if(skips.begin(), skips.end(),
                  [](const LoggedEvent& e) { return e.message.find("hysteresis") != std::string::npos; }),
        67);
    EXPECT_EQ(std::count_if(skips.begin(), skips.end(), [](const LoggedEvent& e) { return e.step <= 10; }), 6);
    expectEventsAgreeWithSkippedCounter(*log);

    const auto decreases = eventsOf(*log, "loss_scale_decrease");
    ASSERT_EQ(decreases.size(), 72u);
    EXPECT_EQ(decreases[4].message.substr(0, 28), "loss scale 4096 -> 2048 (ste") << "start-up ends at 2048";
    int probing = 0;
    for (size_t i = 5; i < decreases.size(); ++i) {
        if (decreases[i].message.rfind("loss scale 65536 -> 32768", 0) == 0)
            ++probing;
        else
            EXPECT_TRUE(decreases[i].message.rfind("loss scale 32768 -> 16384", 0) == 0 && decreases[i].step > 4680
                && decreases[i].step <= 4690)
                << decreases[i].step << " " << decreases[i].message;
    }
    EXPECT_EQ(probing, 66);
    double lowestAfterStartUp = 1e9;
    for (const ScalarPoint& point : log->series.at("loss_scale"))
        if (point.step > 10)
            lowestAfterStartUp = std::min(lowestAfterStartUp, point.value);
    EXPECT_EQ(lowestAfterStartUp, 16384);

    const auto& ppl = log->series.at("ppl");
    ASSERT_EQ(ppl.size(), 17u);
    EXPECT_EQ(ppl.front().step, 0);
    EXPECT_NEAR(ppl.front().value, 4998.3, 0.1);
    EXPECT_NEAR(valueAt(*log, "ppl", 460), 2.018, 1e-3) << "epoch 1 ends at step 460 (460 micro-batches)";
    EXPECT_EQ(ppl.back().step, 7360);
    EXPECT_NEAR(ppl.back().value, 1.809, 1e-3);
    EXPECT_DOUBLE_EQ(log->series.at("skipped_total").back().value, 139);
}

TEST(TrainingTextLogReader, CounterDisagreementIsAWarningNamingTheLine)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string path = writeLog(temp, "train.log",
        "[2024-01-01 10:00:01,000] [INFO] [Rank 0] step=10, skipped=0, lr=[0.001], mom=[(0.9, 0.95)]\n"
        "[2024-01-01 10:00:01,500] [INFO] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1024, "
        "reducing to 512\n"
        "[2024-01-01 10:00:01,600] [INFO] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 512, "
        "reducing to 256\n"
        "[2024-01-01 10:00:02,000] [INFO] [Rank 0] step=20, skipped=3, lr=[0.001], mom=[(0.9, 0.95)]\n");
    const Result<ScalarLog> log = readTrainingTextLog(path);
    ASSERT_TRUE(log.ok()) << log.error();
    ASSERT_EQ(log->warnings.size(), 1u);
    EXPECT_NE(log->warnings[0].find(
                  path + ": line 4: step=20, skipped=3 counts 3 skipped steps since step=10, but 2 overflow lines"),
        std::string::npos)
        << log->warnings[0];
    for (const LoggedEvent& event : eventsOf(*log, "skipped_step"))
        EXPECT_TRUE(event.step > 10 && event.step <= 20) << event.step;
}

TEST(TrainingTextLogReader, WithoutAStepCounterOverflowsAreCountedInOrder)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string path = writeLog(temp, "overflows.log",
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
        "[deepspeed] OVERFLOW! Rank 1 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 32768, reducing to 16384\n");
    const Result<ScalarLog> log = readTrainingTextLog(path);
    ASSERT_TRUE(log.ok()) << log.error();
    const auto skips = eventsOf(*log, "skipped_step");
    ASSERT_EQ(skips.size(), 2u) << "rank 1 repeats rank 0";
    EXPECT_EQ(skips[0].step, 1);
    EXPECT_EQ(skips[1].step, 2);
    EXPECT_TRUE(anyContains(log->notes, "no step counter"));
    EXPECT_DOUBLE_EQ(log->series.at("loss_scale").back().value, 16384);
}

TEST(TrainingTextLogReader, MegatronIterationLines)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    auto iteration = [](int n, const char* loss, const char* scale, int skipped, int nan) {
        return " iteration " + std::to_string(n) + "/  500000 | consumed samples: " + std::to_string(n * 8)
            + " | learning rate: 1.500E-04 | global batch size:     8 | lm loss: " + loss + " | loss scale: " + scale
            + " | grad norm: 1.234 | number of skipped iterations: " + std::to_string(skipped)
            + " | number of nan iterations: " + std::to_string(nan) + " |\n";
    };
    const std::string path = writeLog(temp, "megatron.log",
        "using world size: 8\n" + iteration(1, "1.100000E+01", "65536.0", 0, 0)
            + iteration(2, "1.050000E+01", "32768.0", 1, 0) + iteration(12, "nan", "16384.0", 2, 1)
            + " validation loss at iteration 12 | lm loss value: 9.5E+00 | lm loss PPL: 1.3E+04 |\n");
    EXPECT_TRUE(looksLikeTrainingTextLog(path));
    const Result<ScalarLog> log = readTrainingTextLog(path);
    ASSERT_TRUE(log.ok()) << log.error();
    EXPECT_EQ(log->format, "Megatron-LM log");
    const auto& loss = log->series.at("lm loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_DOUBLE_EQ(loss[1].value, 10.5);
    EXPECT_TRUE(std::isnan(loss[2].value));
    EXPECT_DOUBLE_EQ(valueAt(*log, "loss scale", 12), 16384);
    EXPECT_DOUBLE_EQ(valueAt(*log, "validation lm loss value", 12), 9.5);
    const auto skips = eventsOf(*log, "skipped_step");
    ASSERT_EQ(skips.size(), 3u);
    EXPECT_EQ(skips[0].step, 2) << "interval of one iteration: exact";
    EXPECT_EQ(skips[1].step, 11);
    EXPECT_EQ(skips[2].step, 12);
    EXPECT_NE(skips[1].message.find("one of 2 iterations skipped in 3..12"), std::string::npos) << skips[1].message;
    EXPECT_EQ(eventsOf(*log, "loss_scale_decrease").size(), 2u);
    ASSERT_EQ(eventsOf(*log, "nonfinite_loss").size(), 1u);
    EXPECT_EQ(eventsOf(*log, "nonfinite_loss")[0].step, 12);
    EXPECT_EQ(log->attributes.at("max_steps"), "500000");
}

TEST(TrainingTextLogReader, DeepSpeedChatLossLines)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string path = writeLog(temp, "sft.log",
        "cmd = deepspeed main.py --gradient_accumulation_steps 2 --zero_stage 2\n"
        "Beginning of Epoch 1/2, Total Micro Batches 4\n"
        "Epoch: 0, Step: 0, Rank: 0, loss = 2.5\n"
        "Epoch: 0, Step: 0, Rank: 1, loss = 2.7\n"
        "Epoch: 0, Step: 3, Rank: 0, loss = 2.1\n"
        "Beginning of Epoch 2/2, Total Micro Batches 4\n"
        "Epoch: 1, Step: 1, Rank: 0, loss = 1.9\n");
    const Result<ScalarLog> log = readTrainingTextLog(path);
    ASSERT_TRUE(log.ok()) << log.error();
    const auto& loss = log->series.at("loss");
    ASSERT_EQ(loss.size(), 3u) << "rank 1's line repeats rank 0's step";
    // optimizer step = (epoch * micro-batches + step) / accumulation + 1
    EXPECT_EQ(loss[0].step, 1);
    EXPECT_EQ(loss[1].step, 2);
    EXPECT_EQ(loss[2].step, 3);
    EXPECT_DOUBLE_EQ(loss[2].value, 1.9);
    EXPECT_EQ(log->attributes.at("gradient_accumulation_steps"), "2");
}

TEST(TrainingTextLogReader, WhatIsNotATrainingLog)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string notes = writeLog(temp, "notes.txt", "loss went down\nstep 10 looked fine\n");
    const Result<ScalarLog> log = readTrainingTextLog(notes);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.error().find(notes + ": no DeepSpeed or Megatron training lines found"), std::string::npos)
        << log.error();
    EXPECT_FALSE(looksLikeTrainingTextLog(notes));
    EXPECT_FALSE(looksLikeTrainingTextLog(writeLog(temp, "binary.log", std::string("[deepspeed] \0\x01", 14))));
    EXPECT_FALSE(readTrainingTextLog(temp.file("missing.log")).ok());

    // A description that quotes a DeepSpeed line is not a DeepSpeed log.
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kSftFolder);
    EXPECT_FALSE(looksLikeTrainingTextLog(folder + "/SOURCE.md"));
    EXPECT_FALSE(readTrainingTextLog(folder + "/SOURCE.md").ok());
    EXPECT_TRUE(looksLikeTrainingTextLog(fileIn(folder, ".log")));
}

// Random damage (flipped bytes, a cut, lines of noise): a result or an error naming the file.
TEST(TrainingTextLogReader, RandomDamageIsNeverFatal)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kRewardFolder);
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string original = readBytes(fileIn(folder, ".log"));
    std::mt19937 random(7);
    const std::string path = temp.file("damaged.log");
    for (int trial = 0; trial < 60; ++trial) {
        std::string bytes = original;
        for (int i = 0; i < 50; ++i)
            bytes[random() % bytes.size()] = char(random() % 256);
        bytes.insert(
            random() % bytes.size(), " iteration 99999999999999999999/ 5 | lm loss: 1e999 | step=-3, skipped=1e400\n");
        bytes.resize(random() % bytes.size());
        writeBytes(path, bytes);
        const Result<ScalarLog> log = readTrainingTextLog(path);
        if (!log.ok())
            EXPECT_NE(log.error().find(path), std::string::npos) << log.error();
    }
}
