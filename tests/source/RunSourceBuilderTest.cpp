// The run model built from other tools' logs: names, logging rates, merging, resumed runs.

#include "core/run/RunFormat.h"
#include "core/open/RunScan.h"
#include "core/importers/RunSourceBuilder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace nanscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ScalarLog trainerLikeLog(int steps, int evalEvery)
{
    ScalarLog log;
    log.path = "/tmp/out/trainer_state.json";
    log.format = "Hugging Face Trainer state (trainer_state.json)";
    for (int s = 1; s <= steps; ++s) {
        log.add("loss", s, 2.0 - s * 0.001);
        log.add("grad_norm", s, 1.0);
        log.add("learning_rate", s, 1e-4);
        if (s % evalEvery == 0)
            log.add("eval_loss", s, 1.5);
    }
    return log;
}

std::unique_ptr<MemoryRunSource> build(std::vector<ScalarLog> logs)
{
    RunSourceBuilder builder("/tmp/out");
    for (auto& log : logs)
        builder.add(std::move(log));
    auto run = builder.build();
    EXPECT_TRUE(run.ok()) << run.error();
    return std::move(*run);
}

TEST(RunSourceBuilder, LoggedNamesBecomeTheRunFormatsNames)
{
    auto run = build({trainerLikeLog(50, 10)});
    const TableInfo* scalars = run->table(runformat::kScalars);
    ASSERT_NE(scalars, nullptr);
    EXPECT_EQ(scalars->rows, 50);
    for (const char* name : {"loss", "grad_norm", "lr"})
        EXPECT_NE(std::find(scalars->datasets.begin(), scalars->datasets.end(), name), scalars->datasets.end())
            << name;
    EXPECT_DOUBLE_EQ((*run->readSeries(runformat::kScalars, "lr"))[0], 1e-4);
}

TEST(RunSourceBuilder, EvaluationAtItsOwnRateIsATableOfItsOwnNeverNaNPadding)
{
    auto run = build({trainerLikeLog(50, 10)});
    const TableInfo* scalars = run->table(runformat::kScalars);
    EXPECT_EQ(std::find(scalars->datasets.begin(), scalars->datasets.end(), "eval_loss"), scalars->datasets.end());
    const TableInfo* eval = run->table("eval");
    ASSERT_NE(eval, nullptr);
    EXPECT_EQ(eval->rows, 5);
    EXPECT_EQ(run->steps("eval"), (std::vector<int64_t>{10, 20, 30, 40, 50}));
    const auto evalLoss = run->readSeries("eval", "eval_loss"); // held: a range-for over *temporary dangles
    ASSERT_TRUE(evalLoss.ok());
    for (double v : *evalLoss)
        EXPECT_TRUE(std::isfinite(v));
}

TEST(RunSourceBuilder, ARepeatedStepKeepsItsLastValueAndSaysSo)
{
    ScalarLog log = trainerLikeLog(10, 100);
    log.add("loss", 5, 7.0); // a resumed run logs step 5 again
    log.add("grad_norm", 5, 1.0);
    log.add("learning_rate", 5, 1e-4);
    auto run = build({log});
    EXPECT_EQ(run->table(runformat::kScalars)->rows, 10);
    EXPECT_DOUBLE_EQ((*run->readSeries(runformat::kScalars, "loss"))[4], 7.0);
    bool noted = false;
    for (const auto& note : run->info().source.notes)
        noted = noted || note.find("resumed") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(RunSourceBuilder, EachSeriesComesFromTheLogThatHasMostOfIt)
{
    ScalarLog state = trainerLikeLog(20, 100);
    ScalarLog events;
    events.path = "/tmp/out/runs/x/events.out.tfevents.1";
    events.format = "TensorBoard event file";
    for (int s = 1; s <= 40; ++s)
        events.add("train/loss", s, 3.0);
    auto run = build({state, events});
    EXPECT_EQ(run->table(runformat::kScalars)->rows, 40);
    EXPECT_DOUBLE_EQ((*run->readSeries(runformat::kScalars, "loss"))[0], 3.0);
    EXPECT_NE(run->info().source.format.find("TensorBoard"), std::string::npos);
    EXPECT_NE(run->info().source.format.find("Trainer"), std::string::npos);
    EXPECT_EQ(run->info().source.files.size(), 2u);
}

TEST(RunSourceBuilder, SaysWhatTheSourceLacks)
{
    auto run = build({trainerLikeLog(10, 5)});
    std::string lacks;
    for (const auto& line : run->info().source.lacks)
        lacks += line + "\n";
    EXPECT_NE(lacks.find("per-layer"), std::string::npos) << lacks;
    EXPECT_NE(lacks.find("replay is unavailable"), std::string::npos) << lacks;
    EXPECT_NE(sourceSummary(run->info()).find("Hugging Face Trainer"), std::string::npos);
}

TEST(RunSourceBuilder, NothingFoundIsAnErrorNamingTheLocation)
{
    RunSourceBuilder builder("/tmp/empty-folder");
    auto run = builder.build();
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.error().find("/tmp/empty-folder"), std::string::npos);
}

// The BatchNorm signature (evaluation NaN while training is finite) is found when evaluation is
// logged at a rate of its own, as the Trainer logs it.
TEST(RunSourceBuilder, ScanSeesAnEvaluationLossOfItsOwnRate)
{
    ScalarLog log = trainerLikeLog(400, 20);
    for (auto& p : log.series["eval_loss"])
        if (p.step >= 200)
            p.value = kNaN;
    auto run = build({log});
    auto report = scanRun(*run);
    ASSERT_TRUE(report.ok()) << report.error();
    bool evalNanNamed = false;
    for (const auto& incident : report->report.incidents)
        evalNanNamed = evalNanNamed || incident.evidence.note.find("eval_loss non-finite") != std::string::npos;
    EXPECT_TRUE(evalNanNamed) << report->report.incidents.size() << " incidents";
}


// TensorBoard stamps every event with its wall time; the Trainer's trainer_state.json has none.
// Read together, the training steps get their times from the event file.
TEST(RunSourceBuilder, TheWallTimesOfAnyLogOfTheTrainingSeriesBecomeAWallTimeSeries)
{
    ScalarLog state = trainerLikeLog(20, 100);
    ScalarLog events;
    events.path = "/tmp/out/events.out.tfevents.1";
    events.format = "TensorBoard event file";
    for (int s = 1; s <= 20; ++s)
        events.add("train/loss", s, 2.0 - s * 0.001, 1.7e9 + 3.0 * s);
    auto run = build({state, events});
    const TableInfo* scalars = run->table(runformat::kScalars);
    ASSERT_NE(scalars, nullptr);
    ASSERT_NE(std::find(scalars->datasets.begin(), scalars->datasets.end(), runformat::kWallTime),
              scalars->datasets.end());
    const auto times = run->readSeries(runformat::kScalars, runformat::kWallTime);
    ASSERT_TRUE(times.ok());
    ASSERT_EQ(times->size(), 20u);
    EXPECT_DOUBLE_EQ(times->front(), 1.7e9 + 3.0);
    EXPECT_DOUBLE_EQ(times->back(), 1.7e9 + 60.0);

    // Without stamps there is no wall time, never a series of NaN.
    auto unstamped = build({trainerLikeLog(20, 100)});
    const TableInfo* plain = unstamped->table(runformat::kScalars);
    EXPECT_EQ(std::find(plain->datasets.begin(), plain->datasets.end(), runformat::kWallTime), plain->datasets.end());
}

} // namespace
} // namespace nanscope
