#include "core/importers/TrainerStateReader.h"

#include "SourceTestSupport.h"

#include <cmath>

using namespace nanscope;
using namespace nanscope::testing;

namespace {

const std::string kNanStep18 = "5hiri__Fine-Tuning-LLM-Test__ckpt60-nan-step18/trainer_state.json";
const std::string kInfStep18 = "5hiri__Fine-Tuning-LLM-Test__ckpt60-inf-step18/trainer_state.json";

ScalarLog readOrFail(const std::string& path)
{
    Result<ScalarLog> log = readTrainerState(path);
    EXPECT_TRUE(log.ok()) << log.error();
    return log.ok() ? std::move(log).value() : ScalarLog {};
}

size_t nonFiniteCount(const ScalarLog& log, const std::string& name)
{
    size_t count = 0;
    for (const ScalarPoint& point : log.series.at(name))
        count += std::isfinite(point.value) ? 0 : 1;
    return count;
}

} // namespace

// SOURCE.md: step 18, loss 0.8304 (x75), grad_norm NaN, learning_rate the same as at step 17.
TEST(TrainerStateReader, NanGradNormAtStep18IsData)
{
    const std::string path = realLog(kNanStep18);
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(log.format, kTrainerStateFormat);
    ASSERT_NE(pointAt(log, "grad_norm", 18), nullptr);
    EXPECT_TRUE(std::isnan(valueAt(log, "grad_norm", 18)));
    EXPECT_EQ(nonFiniteCount(log, "grad_norm"), 1u);
    EXPECT_DOUBLE_EQ(valueAt(log, "loss", 18), 0.8304);
    EXPECT_EQ(valueAt(log, "learning_rate", 18), valueAt(log, "learning_rate", 17));
    EXPECT_EQ(pointCount(log, "loss"), 60u);
    EXPECT_EQ(log.attributes.at("global_step"), "60");
    EXPECT_EQ(log.attributes.at("logging_steps"), "1");
    EXPECT_TRUE(log.warnings.empty());
}

// SOURCE.md: grad_norm NaN at step 5 (loss 0.0964), Infinity at step 18 (loss 1.6564).
TEST(TrainerStateReader, InfinityAndNanAreTheirOwnValues)
{
    const std::string path = realLog(kInfStep18);
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    const ScalarPoint* at18 = pointAt(log, "grad_norm", 18);
    ASSERT_NE(at18, nullptr);
    EXPECT_TRUE(std::isinf(at18->value) && at18->value > 0);
    EXPECT_TRUE(std::isnan(valueAt(log, "grad_norm", 5)));
    EXPECT_EQ(nonFiniteCount(log, "grad_norm"), 2u);
    EXPECT_DOUBLE_EQ(valueAt(log, "loss", 18), 1.6564);
    EXPECT_DOUBLE_EQ(valueAt(log, "loss", 5), 0.0964);
}

// SOURCE.md: 6687 entries, steps 1..6687, loss/grad_norm/learning_rate/epoch, grad_norm max 2.24@3202.
TEST(TrainerStateReader, LongHealthyRunKeepsEveryPoint)
{
    const std::string path
        = realLog("DigitalIntelligenceCenter-of-ICMM__Baize-TCM__healthy-6687steps/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    for (const char* name : { "loss", "grad_norm", "learning_rate", "epoch" })
        EXPECT_EQ(pointCount(log, name), 6687u) << name;
    const std::vector<ScalarPoint>& gradNorm = log.series.at("grad_norm");
    EXPECT_EQ(gradNorm.front().step, 1);
    EXPECT_EQ(gradNorm.back().step, 6687);
    EXPECT_EQ(nonFiniteCount(log, "grad_norm") + nonFiniteCount(log, "loss"), 0u);
    const auto largest = std::max_element(
        gradNorm.begin(), gradNorm.end(), [](const ScalarPoint& a, const ScalarPoint& b) { return a.value < b.value; });
    EXPECT_EQ(largest->step, 3202);
    EXPECT_NEAR(largest->value, 2.24, 0.005);
    EXPECT_TRUE(log.warnings.empty());
    EXPECT_FALSE(anyContains(log.notes, "more than once"));
}

// SOURCE.md: 3000 train entries + 30 eval entries (eval_loss every 100 steps), loss max 30.64@51,
// eval_loss 1.55@3000, best_model_checkpoint = checkpoint-1500, max_steps 4000.
TEST(TrainerStateReader, TrainAndEvalEntriesAreSeparateSeries)
{
    const std::string path = realLog("TANGHULU6__Llama3-8B-Mob__lr2e-3-divergence/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(pointCount(log, "loss"), 3000u);
    EXPECT_EQ(pointCount(log, "grad_norm"), 3000u);
    EXPECT_EQ(pointCount(log, "eval_loss"), 30u);
    EXPECT_EQ(log.series.at("eval_loss").front().step, 100);
    EXPECT_NEAR(valueAt(log, "eval_loss", 3000), 1.55, 0.005);
    EXPECT_NEAR(valueAt(log, "loss", 51), 30.64, 0.005);
    // A train and an eval entry share each eval step; the epoch is one point per step.
    EXPECT_EQ(pointCount(log, "epoch"), 3000u);
    EXPECT_NE(log.attributes.at("best_model_checkpoint").find("checkpoint-1500"), std::string::npos);
    EXPECT_EQ(log.attributes.at("max_steps"), "4000");
    EXPECT_FALSE(anyContains(log.notes, "more than once"));
}

// SOURCE.md: "lr" instead of "learning_rate", a text "remaining_time", train/acc_0..6, 2000 entries,
// grad_norm spike 82.4@22360.
TEST(TrainerStateReader, CustomKeysAreKeptAsLogged)
{
    const std::string path = realLog("HangerYang__Star__custom-keys-gradspikes/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(pointCount(log, "lr"), 2000u);
    EXPECT_EQ(log.series.count("learning_rate"), 0u);
    EXPECT_EQ(pointCount(log, "train/acc_6"), 2000u);
    EXPECT_EQ(pointCount(log, "train/ploss_0"), 2000u);
    EXPECT_EQ(log.series.count("remaining_time"), 0u);
    EXPECT_TRUE(anyContains(log.notes, "remaining_time (2000 text)"));
    EXPECT_NEAR(valueAt(log, "grad_norm", 22360), 82.4, 0.05);
}

// SOURCE.md: 121 entries, the last the train summary; grad_norm NaN at steps 1, 2 and 6.
TEST(TrainerStateReader, SummaryEntryBecomesAttributes)
{
    const std::string path = realLog("ChenguangYang96UCR__KG-LLM__amp-nan-gradnorm/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(pointCount(log, "loss"), 120u);
    EXPECT_EQ(pointCount(log, "epoch"), 120u);
    EXPECT_EQ(log.series.count("train_runtime"), 0u);
    EXPECT_EQ(log.series.count("train_loss"), 0u);
    EXPECT_EQ(log.attributes.at("train_runtime"), "2304.296");
    EXPECT_EQ(log.attributes.at("train_samples_per_second"), "1.684");
    EXPECT_EQ(std::stod(log.attributes.at("train_loss")), 0.7774592893819015);
    for (int step : { 1, 2, 6 })
        EXPECT_TRUE(std::isnan(valueAt(log, "grad_norm", step))) << step;
    EXPECT_EQ(nonFiniteCount(log, "grad_norm"), 3u);
    EXPECT_EQ(nonFiniteCount(log, "loss"), 0u);
    EXPECT_FALSE(anyContains(log.notes, "more than once"));
}

// SOURCE.md: only eval entries, eval_loss NaN at 16, 32, 48, 64, 80; no train loss at all.
TEST(TrainerStateReader, EvalOnlyLogHasNoLossSeries)
{
    const std::string path = realLog("jr7072__adl_hw3__eval-loss-nan/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(path);
    const ScalarLog log = readOrFail(path);
    EXPECT_EQ(log.series.count("loss"), 0u);
    ASSERT_EQ(pointCount(log, "eval_loss"), 5u);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(log.series.at("eval_loss")[i].step, 16 * (i + 1));
        EXPECT_TRUE(std::isnan(log.series.at("eval_loss")[i].value));
    }
    EXPECT_FALSE(log.empty());
}

// A trainer_state.json copied while the Trainer rewrote it: cut at half, and inside an entry.
TEST(TrainerStateReader, TruncatedFileKeepsEveryEntryBeforeTheCut)
{
    const std::string original = realLog(kNanStep18);
    NANSCOPE_REQUIRE_REAL_LOG(original);
    const std::string bytes = readBytes(original);
    const ScalarLog whole = readOrFail(original);
    ScratchFolder scratch;
    for (const size_t cut : { bytes.size() / 2, bytes.size() / 2 + 60 }) {
        const std::string prefix = bytes.substr(0, cut);
        // Entries are written with their closing brace indented by four spaces.
        size_t completeEntries = 0;
        for (size_t at = prefix.find("\n    }"); at != std::string::npos; at = prefix.find("\n    }", at + 1))
            ++completeEntries;
        ASSERT_GT(completeEntries, 18u) << "the cut should fall after the NaN at step 18";

        const std::string path = scratch.write("cut-" + std::to_string(cut) + ".json", prefix);
        const ScalarLog log = readOrFail(path);
        ASSERT_EQ(pointCount(log, "loss"), completeEntries) << "cut at byte " << cut;
        for (size_t i = 0; i < completeEntries; ++i) {
            EXPECT_EQ(log.series.at("loss")[i].step, whole.series.at("loss")[i].step);
            EXPECT_EQ(log.series.at("loss")[i].value, whole.series.at("loss")[i].value);
        }
        EXPECT_TRUE(std::isnan(valueAt(log, "grad_norm", 18)));
        ASSERT_EQ(log.warnings.size(), 1u);
        const std::string& warning = log.warnings.front();
        EXPECT_NE(warning.find(path), std::string::npos) << warning;
        EXPECT_NE(
            warning.find("log_history entry " + std::to_string(completeEntries + 1) + " (byte "), std::string::npos)
            << warning;
    }
}

TEST(TrainerStateReader, DamagedEntryIsSkippedAndTheOthersRead)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("trainer_state.json", R"({"global_step": 3, "log_history": [
        {"loss": 1.5, "step": 1},
        {"loss": 1.4x, "step": 2},
        {"loss": 1.3, "step": 3}
    ], "max_steps": 3})");
    const ScalarLog log = readOrFail(path);
    ASSERT_EQ(pointCount(log, "loss"), 2u);
    EXPECT_EQ(log.series.at("loss")[0].step, 1);
    EXPECT_EQ(log.series.at("loss")[1].step, 3);
    ASSERT_EQ(log.warnings.size(), 1u);
    EXPECT_NE(log.warnings[0].find(path + ": log_history entry 2 (byte "), std::string::npos) << log.warnings[0];
    EXPECT_EQ(log.attributes.at("max_steps"), "3");
}

// The bare words are replaced outside strings only: a key or a text that reads NaN stays what it is.
TEST(TrainerStateReader, NonFiniteWordsInsideStringsAreText)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("trainer_state.json", R"({"log_history": [
        {"loss": -Infinity, "NaN": 2.5, "note": "NaN } { \"Infinity\" ]", "step": 1},
        {"loss": Infinity, "grad_norm": NaN, "NaN": 3.5, "step": 2}
    ], "run_name": "NaN-hunt"})");
    const ScalarLog log = readOrFail(path);
    EXPECT_TRUE(std::isinf(valueAt(log, "loss", 1)) && valueAt(log, "loss", 1) < 0);
    EXPECT_TRUE(std::isinf(valueAt(log, "loss", 2)) && valueAt(log, "loss", 2) > 0);
    EXPECT_TRUE(std::isnan(valueAt(log, "grad_norm", 2)));
    EXPECT_EQ(valueAt(log, "NaN", 1), 2.5);
    EXPECT_EQ(log.series.count("note"), 0u);
    EXPECT_EQ(log.attributes.at("run_name"), "NaN-hunt");
    EXPECT_TRUE(log.warnings.empty());
    EXPECT_TRUE(anyContains(log.notes, "note (1 text)"));
}

TEST(TrainerStateReader, ResumedRunKeepsRepeatedStepsAndSaysSo)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("trainer_state.json", R"({"log_history": [
        {"loss": 3.0, "step": 1}, {"loss": 2.0, "step": 2}, {"loss": 1.0, "step": 3},
        {"loss": 2.1, "step": 2}, {"loss": 1.1, "step": 3}, {"loss": 0.5, "step": 4}
    ]})");
    const ScalarLog log = readOrFail(path);
    ASSERT_EQ(pointCount(log, "loss"), 6u);
    EXPECT_EQ(log.series.at("loss")[3].step, 2);
    EXPECT_EQ(log.series.at("loss")[3].value, 2.1);
    EXPECT_TRUE(anyContains(log.notes, "2 steps are logged more than once")) << ::testing::PrintToString(log.notes);
    EXPECT_TRUE(anyContains(log.notes, "entry 4"));
}

TEST(TrainerStateReader, FileThatIsNotJsonIsAnErrorNamingIt)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("trainer_state.json", "step,loss\n1,0.5\n");
    const Result<ScalarLog> log = readTrainerState(path);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.error().find(path), std::string::npos) << log.error();
    EXPECT_NE(log.error().find("not JSON"), std::string::npos) << log.error();
}

TEST(TrainerStateReader, JsonWithoutLogHistoryIsAnErrorNamingIt)
{
    ScratchFolder scratch;
    const std::string path = scratch.write("config.json", R"({"model_type": "llama", "hidden_size": 4096})");
    const Result<ScalarLog> log = readTrainerState(path);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.error().find(path + ": no \"log_history\""), std::string::npos) << log.error();
}

TEST(TrainerStateReader, MissingEmptyAndCutBeforeLogHistoryAreErrors)
{
    ScratchFolder scratch;
    for (const std::string& path : { scratch.path() + "/absent.json", scratch.write("empty.json", ""),
             scratch.write("head.json", "{\n  \"best_metric\": null,\n  \"epo"), scratch.path() }) {
        const Result<ScalarLog> log = readTrainerState(path);
        ASSERT_FALSE(log.ok()) << path;
        EXPECT_EQ(log.error().rfind(path + ": ", 0), 0u) << log.error();
    }
}

// A file cut at any byte reads without a crash or a hang, never gives an entry that was not whole,
// and an Error only while the cut is before log_history's first entry.
TEST(TrainerStateReader, CutAtEveryByte)
{
    const std::string original = realLog("jr7072__adl_hw3__eval-loss-nan/trainer_state.json");
    NANSCOPE_REQUIRE_REAL_LOG(original);
    const std::string bytes = readBytes(original);
    const size_t listStart = bytes.find("\"log_history\": [") + 16;
    ScratchFolder scratch;
    size_t previousEntries = 0;
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
        const std::string path = scratch.write("cut-" + std::to_string(cut) + ".json", bytes.substr(0, cut));
        const Result<ScalarLog> log = readTrainerState(path);
        ASSERT_EQ(log.ok(), cut >= listStart) << "cut at byte " << cut << ": " << log.error();
        if (!log.ok())
            continue;
        const size_t entries = pointCount(*log, "eval_loss");
        ASSERT_GE(entries, previousEntries) << "cut at byte " << cut;
        ASSERT_LE(entries, 5u);
        const bool onlyWhitespaceCut = bytes.find_first_not_of(" \n", cut) == std::string::npos;
        ASSERT_EQ(log->warnings.size(), onlyWhitespaceCut ? 0u : 1u) << "cut at byte " << cut;
        previousEntries = entries;
    }
    EXPECT_EQ(previousEntries, 5u);
}
