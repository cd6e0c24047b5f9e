// The log reader that finds a log's structure (issue 49), on real public logs of tools nanscope was
// not told the format of: RL trainers (verl, stable-baselines3, CleanRL), GAN code (pix2pix),
// Composer, TRL, LLaMA-Factory, text-generation-webui, Lightning and Hugging Face consoles,
// detectron2, MMSegmentation, Ultralytics, Keras and fastai tables, W&B run files. Each folder of
// tests/data/logs holds the file as its repository has it (or a contiguous cut of it) and a
// SOURCE.md citing the repository, path and commit, and what a person reads in it; the truths
// below are that reading.

#include "SourceTestSupport.h"

#include "core/importers/JsonLinesLogReader.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/TextRecordLogReader.h"
#include "core/importers/ValueNameWords.h"
#include "core/importers/TextRecords.h"
#include "core/importers/WandbRecordReader.h"
#include "core/open/OpenRun.h"
#include "core/open/RunScan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

namespace nanscope {
namespace {

using testing::ScratchFolder;

std::string fixture(const std::string& relative)
{
    return std::string(NANSCOPE_LOG_FIXTURES) + "/" + relative;
}

// The first file in the fixture folder whose name starts with `start`.
std::string fixtureFile(const std::string& folder, const std::string& start)
{
    for (const auto& entry : std::filesystem::directory_iterator(fixture(folder)))
        if (entry.path().filename().string().rfind(start, 0) == 0)
            return entry.path().string();
    return {};
}

struct SeriesTruth
{
    const char* name;
    size_t points;
    int64_t firstStep, lastStep;
    std::optional<int64_t> firstNonfinite; // none: every value finite
};

struct LogTruth
{
    const char* folder;
    const char* file;     // the start of its name
    const char* reader;   // LogReader::id
    const char* stepFrom; // in the reader's first note
    std::vector<SeriesTruth> series;
    std::vector<const char*> notSeries; // names a person would not call a series
};

std::ostream& operator<<(std::ostream& os, const LogTruth& truth)
{
    return os << truth.folder;
}

const LogTruth kLogs[] = {
    // verl under Ray: ANSI-coloured tags, " - " between 70 `/`-nested names; `Action: GOTO(NaN)` is an
    // action's text, not a metric; the tags' pids are no series.
    {"yuzhaouoe__GUI-Cursor-Moving__verl-console-nan-text", "verl_demo.log", "text-records", "\"step\"",
     {{"actor/pg_loss", 5, 1, 5, {}}, {"actor/grad_norm", 5, 1, 5, {}}, {"critic/score/mean", 5, 1, 5, {}}},
     {"Action", "TaskRunner pid", "CursorLoopWorker pid"}},
    // pix2pix: "(epoch: 1, iters: 100, ...) G_GAN: 2.873 ..."; `iters` starts again at every epoch.
    {"luoyaxiong__pix2pix__facades-loss-log-restart", "loss_log.txt", "text-records", "\"iters\"",
     {{"G_GAN", 549, 100, 49050, {}}, {"D_fake", 549, 100, 49050, {}}},
     {}},
    // stable-baselines3's printed tables: one record between rules, names under their group.
    {"cristianbautista123__hierarchical_rl_robotaxi__sb3-ppo-table", "train.out", "text-records",
     "\"time/total_timesteps\"",
     {{"rollout/ep_rew_mean", 59, 2048, 301056, {}}, {"train/loss", 58, 4096, 300000, {}}},
     {"ep_rew_mean"}},
    // Composer: "[batch=10/20]:" then one metric an indented line.
    {"Helios113__dyna__composer-console-batch-records", "profile", "text-records", "\"batch\"",
     {{"Train loss/train/total", 3, 1, 20, {}}},
     {"Gb", "Kb", "R..."}},
    // A Hugging Face Trainer's dicts in W&B's output.log, which kept only the progress bar's last
    // frame (760/760) before all of them: the step is the dicts' order, not 760.
    {"tsebaka__T-Lab-2024-LLM-Alignment__wandb-run-hf-trainer", "output.log", "text-records", "order",
     {{"loss", 25, 0, 24, {}}, {"grad_norm", 25, 0, 24, {}}},
     {}},
    // TRL GRPO in a terminal: the dicts follow the progress bar, which counts the steps 10..150.
    {"JuncyLu__trl_DAPO__trl-grpo-terminal-nan-warnings", "run_terminal.md", "text-records", "progress bar",
     {{"loss", 15, 10, 150, {}}, {"grad_norm", 15, 10, 150, {}}},
     {"Loading checkpoint shards", "and"}},
    // text-generation-webui: "Step:      3 {'loss': 2.4395, 'grad_norm': inf, ...}" on all 171 steps.
    {"eminaydinalp__LLM_Degerlendirme__textgen-webui-training-pro-gradnorm-inf", "b1_retrain_params.md",
     "text-records", "\"Step\"",
     {{"grad_norm", 171, 3, 683, 3}, {"loss", 171, 3, 683, {}}},
     {"Learning Rate", "NEFtune Scale"}},
    // Lightning's progress bar with loss=nan at global steps 51 and 103.
    {"fz-gwu__autom3l__lightning-automm-loss-nan", "readme_result.py", "text-records", "\"global step\"",
     {{"loss", 2, 51, 103, 51}},
     {}},
    // A Trainer on Trainium, pasted: most bar redraws lost; loss 0.0, then NaN at steps 6 and 7.
    {"mesolitica__malaya__hf-trainer-neuron-loss-nan", "README.md", "text-records", "progress bar",
     {{"loss", 9, 1, 9, 6}},
     {"remaining items are", "total is"}},
    // LLaMA-Factory's running log: the model configuration printed 15 times is no series.
    {"LzZzZx328__finetune_LLM__llamafactory-running-log", "running_log.txt", "text-records", "order",
     {{"loss", 255, 1, 267, {}}, {"epoch", 255, 1, 267, {}}},
     {"hidden_size", "logging.py", "bos_token_id"}},
    // CleanRL: "global step=112, episodic return=3.0", several runs appended.
    {"Arnie-He__BLPO__jax-ppo-episodic-returns", "ppo.log", "text-records", "\"global step\"",
     {{"episodic return", 1406, 112, 1736, {}}},
     {}},
    // detectron2's metrics.json: training rows every 20 iterations, evaluation rows with NaN APs.
    {"Ghailen-Ben-Achour__detectron2_detection__metrics-json-eval-APs-NaN", "metrics.json", "json-lines",
     "\"iteration\"",
     {{"total_loss", 15, 19, 299, {}}, {"bbox/APs", 3, 99, 300, 99}, {"bbox/AP", 3, 99, 300, {}}},
     {}},
    // mmcv's log.json: validation rows ("mode": "val", "iter": 64) sit at the training step before.
    {"quynhanh12345__Potato_segmentation__mmseg-mmcv-log-json", "None.log.json", "json-lines", "\"iter\"",
     {{"loss", 237, 10, 2370, {}}, {"val/mIoU", 11, 200, 2200, {}}},
     {}},
    // LLaMA-Factory's trainer_log.jsonl: every step written twice.
    {"rameyjm7__SFT-Training-LLM__llamafactory-trainer-log-dup-steps-resume", "trainer_log.jsonl", "json-lines",
     "\"current_steps\"",
     {{"loss", 100, 10, 1000, {}}},
     {}},
    // A script's own JSON lines: a configuration line first and a "done" line last, no step in them.
    {"bmtlima__On-Policy-Distillation__custom-jsonl-event-step-negative-loss", "train_log.jsonl", "json-lines",
     "\"step\"",
     {{"train/loss", 51, 0, 50, {}}, {"train/grad_norm", 51, 0, 50, {}}},
     {}},
    // Ultralytics: headers padded with spaces, a row per epoch, no column called loss.
    {"Abonia1__YOLOv8-Fire-and-Smoke-Detection__ultralytics-results-csv-padded", "results.csv", "table",
     "epoch", {{"train/box_loss", 25, 0, 24, {}}, {"val/box_loss", 25, 0, 24, {}}},
     {}},
    // stable-baselines3's progress.csv: the first row's train/ cells empty.
    {"TobiasLudwig02__RLFlappyBird__sb3-ppo-progress-csv", "progress.csv", "table", "\"time/total_timesteps\"",
     {{"train/loss", 278, 2048, 285696, {}}, {"rollout/ep_rew_mean", 279, 1024, 285696, {}}},
     {}},
    // Keras' CSVLogger, as training.log.
    {"4hmetcakmak__BraTS2020CapstoneProject__keras-csvlogger-training-log", "training.log", "table", "epoch",
     {{"loss", 24, 0, 23, {}}, {"val_loss", 24, 0, 23, {}}},
     {}},
    // fastai's CSVLogger: its time column (04:39) is text.
    {"matcgoes__fastai-sportsball-classifier__fastai-csvlogger-history-csv", "history.csv", "table", "epoch",
     {{"train_loss", 19, 0, 18, {}}, {"valid_loss", 19, 0, 18, {}}},
     {"time"}},
    // Keras' history dumped as columns: NaN from epoch 3.
    {"hoidn__PtychoPINN__keras-history-json-nan-epoch3", "history.json", "json-columns", "epochs",
     {{"metrics/loss", 5, 0, 4, 3}},
     {}},
    // Keras' model.fit, one summary line an epoch after "Epoch 3/40": the bar's 313/313 counted on.
    {"AntoineDW__cat-or-dog-keras__keras-fit-epoch-summaries-healthy", "training_log.txt", "text-records",
     "progress bar", {{"loss", 40, 313, 12520, {}}, {"val_acc", 40, 313, 12520, {}}},
     {}},
    // Keras with every batch's progress line: "ETA: 10s - loss: 4.0357 - acc: 0.0563".
    {"Allegra42__ki-keras-belgian-traffic-sign__keras-fit-batch-progress-lines", "training_log.txt", "text-records",
     "progress bar", {{"loss", 375, 1, 1995, {}}, {"val_loss", 7, 285, 1995, {}}},
     {}},
    // cgcnn2: "Epoch [001/300] - Train Loss: 145.13359, Valid Loss: 70.66399, LR: [0.001]", CRLF ends.
    {"CaryBond__data-science-project__cgcnn2-pytorch-epoch-lines", "readme_output_aws.txt", "text-records",
     "the epoch", {{"Train Loss", 250, 1, 250, {}}, {"Valid Loss", 250, 1, 250, {}}},
     {}},
    // fastai v2's table printed with spaces, pasted into a blog post: a row of one epoch, then 20.
    {"NickHerrig__nickherrig.com__fastai-fine-tune-table-in-blog-md", "drink-classifier.md", "text-records", "order",
     {{"train_loss", 21, 3, 23, {}}, {"error_rate", 21, 3, 23, {}}},
     {}},
    // fastai v1's tables, several trainings in one file (their epochs start again).
    {"n-waves__multifit__fastai-v1-console-table-md", "qrrn-ja.md", "text-records", "order",
     {{"train_loss", 33, 1, 39, {}}, {"accuracy", 33, 1, 39, {}}},
     {}},
    // W&B's binary run file, written by wandb-core 0.19.8 (nested keys).
    {"02hyc__VQ-VAE__wandb-run-x7n9fszq", "run-x7n9fszq.wandb", "wandb-records", "_step",
     {{"train_loss", 62, 0, 61, {}}, {"train_reconstruction_loss", 62, 0, 61, {}}},
     {}},
};

const std::vector<ScalarPoint>* findSeries(const ScalarLog& log, const std::string& name)
{
    auto it = log.series.find(name);
    return it == log.series.end() ? nullptr : &it->second;
}

class RealLogStructure : public ::testing::TestWithParam<LogTruth>
{
};

TEST_P(RealLogStructure, FindsTheStepAndTheSeriesAPersonReads)
{
    const LogTruth& truth = GetParam();
    const std::string path = fixtureFile(truth.folder, truth.file);
    ASSERT_FALSE(path.empty()) << truth.folder;
    const SniffedFile sniffed = sniffLogFile(path);
    ASSERT_NE(sniffed.reader, nullptr) << sniffed.refusal;
    EXPECT_EQ(std::string(sniffed.reader->id), truth.reader) << sniffed.verdict.what;
    auto log = sniffed.reader->read(path);
    ASSERT_TRUE(log) << log.error();
    std::string notes;
    for (const std::string& note : log->notes)
        notes += note + "\n";
    EXPECT_NE(notes.find(truth.stepFrom), std::string::npos) << notes;
    for (const SeriesTruth& expected : truth.series) {
        const auto* points = findSeries(*log, expected.name);
        ASSERT_NE(points, nullptr) << expected.name << " missing\n" << notes;
        ASSERT_EQ(points->size(), expected.points) << expected.name;
        EXPECT_EQ(points->front().step, expected.firstStep) << expected.name;
        EXPECT_EQ(points->back().step, expected.lastStep) << expected.name;
        auto bad = std::find_if(points->begin(), points->end(), [](const ScalarPoint& p) {
            return !std::isfinite(p.value);
        });
        if (expected.firstNonfinite)
            EXPECT_TRUE(bad != points->end() && bad->step == *expected.firstNonfinite) << expected.name;
        else
            EXPECT_TRUE(bad == points->end()) << expected.name << " non-finite at step " << bad->step;
    }
    for (const char* name : truth.notSeries)
        EXPECT_EQ(findSeries(*log, name), nullptr) << name << " is no series\n" << notes;
}

INSTANTIATE_TEST_SUITE_P(TestDataLogs, RealLogStructure, ::testing::ValuesIn(kLogs));

// What the scan says of them: the NaN is found where a person sees it, an undefined metric is
// not a blow-up, and healthy runs raise nothing critical.
struct ScanTruth
{
    const char* path;
    std::optional<int64_t> criticalBlowupAt; // none: nothing critical
};

TEST(RealLogStructure, TheScanFindsTheNaNWhereAPersonSeesIt)
{
    const ScanTruth truths[] = {
        {"fz-gwu__autom3l__lightning-automm-loss-nan/readme_result.py", 51},
        {"mesolitica__malaya__hf-trainer-neuron-loss-nan/README.md", 6},
        {"hoidn__PtychoPINN__keras-history-json-nan-epoch3/history.json", 3},
        // Every step's gradient norm is Inf: every update was skipped or zeroed; the loss stays flat.
        {"eminaydinalp__LLM_Degerlendirme__textgen-webui-training-pro-gradnorm-inf/b1_retrain_params.md", 3},
        {"Ghailen-Ben-Achour__detectron2_detection__metrics-json-eval-APs-NaN", {}},
        {"yuzhaouoe__GUI-Cursor-Moving__verl-console-nan-text/verl_demo.log", {}},
        {"luoyaxiong__pix2pix__facades-loss-log-restart", {}},
        {"cristianbautista123__hierarchical_rl_robotaxi__sb3-ppo-table/train.out", {}},
        {"02hyc__VQ-VAE__wandb-run-x7n9fszq", {}},
        {"Abonia1__YOLOv8-Fire-and-Smoke-Detection__ultralytics-results-csv-padded", {}},
        {"quynhanh12345__Potato_segmentation__mmseg-mmcv-log-json", {}},
    };
    for (const ScanTruth& truth : truths) {
        auto run = openRun(fixture(truth.path));
        ASSERT_TRUE(run) << truth.path << ": " << run.error();
        auto scan = scanRun(**run);
        ASSERT_TRUE(scan) << truth.path << ": " << scan.error();
        std::optional<int64_t> critical;
        std::string listing;
        for (const Incident& i : scan->report.incidents) {
            listing += std::string(toString(i.kind)) + " " + toString(i.severity) + " @" +
                       std::to_string(i.onsetStep) + "\n";
            if (i.severity == Severity::Critical && !critical)
                critical = i.onsetStep;
        }
        EXPECT_EQ(critical, truth.criticalBlowupAt) << truth.path << "\n" << listing;
    }
}

// Several losses and none called loss: the judgement is made on the total, the one loss, or the
// sum of a GAN's sides, and the run says which (info's attributes, the notes).
TEST(RealLogStructure, ARunWithoutALossIsJudgedOnWhatItHasAndSaysWhich)
{
    const std::pair<const char*, const char*> truths[] = {
        {"luoyaxiong__pix2pix__facades-loss-log-restart", "D_fake + D_real + G_GAN + G_L1"},
        {"Ghailen-Ben-Achour__detectron2_detection__metrics-json-eval-APs-NaN", "total_loss"},
        {"Abonia1__YOLOv8-Fire-and-Smoke-Detection__ultralytics-results-csv-padded",
         "train/box_loss + train/cls_loss + train/dfl_loss"},
        {"hoidn__PtychoPINN__keras-history-json-nan-epoch3/history.json", "metrics/loss"},
    };
    for (const auto& [path, source] : truths) {
        auto run = openRun(fixture(path));
        ASSERT_TRUE(run) << path << ": " << run.error();
        const auto& attributes = (*run)->info().attributes;
        auto it = attributes.find("loss_source");
        ASSERT_NE(it, attributes.end()) << path;
        EXPECT_EQ(it->second, source) << path;
    }
    // verl: the policy-gradient loss is signed, so the run is judged on its gradient norm.
    auto verl = openRun(fixture("yuzhaouoe__GUI-Cursor-Moving__verl-console-nan-text/verl_demo.log"));
    ASSERT_TRUE(verl) << verl.error();
    EXPECT_EQ((*verl)->info().attributes.count("loss_source"), 0u);
    const auto& scalars = (*verl)->info().tables;
    auto table = std::find_if(scalars.begin(), scalars.end(), [](const TableInfo& t) { return t.name == "scalars"; });
    ASSERT_NE(table, scalars.end());
    EXPECT_NE(std::find(table->datasets.begin(), table->datasets.end(), "grad_norm"), table->datasets.end());
    EXPECT_EQ(std::find(table->datasets.begin(), table->datasets.end(), "loss"), table->datasets.end());
}

// A W&B run folder as W&B lays it out: the binary run file is the history; its summary, config,
// metadata and the console's output.log are named with what was made of each.
TEST(RealLogStructure, AWandbRunFolderOpensOnItsRunFile)
{
    auto run = openRun(fixture("02hyc__VQ-VAE__wandb-run-x7n9fszq"));
    ASSERT_TRUE(run) << run.error();
    const RunInfo& info = (*run)->info();
    EXPECT_NE(info.source.format.find("W&B run file"), std::string::npos) << info.source.format;
    EXPECT_EQ(info.attributes.at("config.batch_size"), "64");
    EXPECT_EQ(info.attributes.at("wandb_run_id"), "x7n9fszq");
    EXPECT_EQ(info.attributes.at("exit_code"), "255");
    std::string notes;
    for (const std::string& note : info.source.notes)
        notes += note + "\n";
    for (const char* said : {"run-x7n9fszq.wandb: read as W&B run file", "the run exited with code 255",
                             "not read: ", "wandb-metadata.json", "config.yaml: settings (.yaml), not a log",
                             "wandb-summary.json: one JSON object"})
        EXPECT_NE(notes.find(said), std::string::npos) << said << "\n" << notes;
    const auto loss = (*run)->readSeries("scalars", "loss");
    ASSERT_TRUE(loss) << loss.error();
    ASSERT_EQ(loss->size(), 62u);
    EXPECT_NEAR(loss->front(), 1.37413, 1e-5);
}

// ---- W&B's framing, on W&B's own files and on files written here by its rules ------------------

TEST(WandbRecordReader, ReadsNaNAndInfinityAndNamesDamagedRecords)
{
    const std::string folder = fixture("wandb__wandb__leet-fixtures-nan-crc-truncated");
    auto edge = logReaders().front().read(folder + "/run-nanedge1.wandb");
    ASSERT_TRUE(edge) << edge.error();
    const auto* values = findSeries(*edge, "edge/nan_inf");
    ASSERT_NE(values, nullptr);
    ASSERT_EQ(values->size(), 20u);
    bool nan = false, inf = false, negativeInf = false;
    for (const ScalarPoint& p : *values) {
        nan = nan || std::isnan(p.value);
        inf = inf || p.value == INFINITY;
        negativeInf = negativeInf || p.value == -INFINITY;
    }
    EXPECT_TRUE(nan && inf && negativeInf);

    // A flipped byte in record 3's fragment: records 1 and 2 are read, record 3 is named with its byte.
    auto crc = logReaders().front().read(folder + "/bad-crc.wandb");
    ASSERT_TRUE(crc) << crc.error();
    ASSERT_FALSE(crc->warnings.empty());
    EXPECT_NE(crc->warnings.front().find("record 3 (byte 143): CRC-32 mismatch"), std::string::npos)
        << crc->warnings.front();
    EXPECT_EQ(findSeries(*crc, "wire/metric")->size(), 1u);

    // Cut inside its fifth record: the four before it are read, and the cut is named.
    auto cut = logReaders().front().read(folder + "/truncated-tail.wandb");
    ASSERT_TRUE(cut) << cut.error();
    EXPECT_EQ(findSeries(*cut, "wire/metric")->size(), 3u);
    ASSERT_EQ(cut->warnings.size(), 1u);
    EXPECT_NE(cut->warnings.front().find("record 5 (byte 290): the file ends inside a record"), std::string::npos)
        << cut->warnings.front();
}

// wandb-core 0.15.10 to 0.17.5 counted its blocks from after the 7-byte header.
TEST(WandbRecordReader, ReadsTheBlocksOfEarlyWandbCoreFiles)
{
    auto run = logReaders().front().read(
        fixture("alessioborgi__BioHeat_PINNs__wandb-core-0.17.3-offset-blocks/run-y4isg5y4.wandb"));
    ASSERT_FALSE(run);
    // Every record read, none damaged: the run simply logged no history.
    EXPECT_NE(run.error().find("198 records, 0 history rows"), std::string::npos) << run.error();
}

// A real run with an Inf loss, cut after its first 96 KiB (inside a console record).
TEST(WandbRecordReader, AnInfiniteLossInARunCutShortIsRead)
{
    auto run = logReaders().front().read(fixture("hatsyim__hcpinnseikonal__wandb-inf-loss-first-96KiB/run-3mx0i9j5.wandb"));
    ASSERT_TRUE(run) << run.error();
    const auto* loss = findSeries(*run, "train_pde_loss");
    ASSERT_NE(loss, nullptr);
    ASSERT_EQ(loss->size(), 1u);
    // W&B's row 0; Lightning's WandbLogger logged the training's own step with it:
    // trainer/global_step 5711, which is the step (LoggedStepSeries).
    EXPECT_EQ(loss->front().step, 5711);
    EXPECT_TRUE(nanscope::testing::anyContains(run->notes, "\"trainer/global_step\""));
    EXPECT_EQ(loss->front().value, INFINITY);
    ASSERT_EQ(run->warnings.size(), 1u);
    EXPECT_NE(run->warnings.front().find("the file ends inside a record"), std::string::npos);
}

// Protocol-buffer bytes of a W&B Record with one history row, written by the schema's numbers.
std::string varint(uint64_t value)
{
    std::string out;
    while (value >= 0x80) {
        out += char((value & 0x7F) | 0x80);
        value >>= 7;
    }
    out += char(value);
    return out;
}

std::string field(int number, const std::string& bytes)
{
    return varint(uint64_t(number) << 3 | 2) + varint(bytes.size()) + bytes;
}

std::string historyRecord(int64_t step, const std::string& key, const std::string& valueJson,
                          const std::string& padding = {})
{
    std::string items = field(1, field(1, "_step") + field(16, std::to_string(step))) +
                        field(1, field(2, "train") + field(2, key) + field(16, valueJson));
    if (!padding.empty())
        items += field(1, field(1, "note") + field(16, "\"" + padding + "\""));
    return field(2, items);
}

uint32_t crc32Of(uint8_t type, const std::string& data)
{
    // The bitwise CRC-32 (zlib's polynomial), over the type byte and then the data.
    uint32_t crc = 0xFFFFFFFFu;
    auto feed = [&](uint8_t byte) {
        crc ^= byte;
        for (int k = 0; k < 8; ++k)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    };
    feed(type);
    for (char c : data)
        feed(uint8_t(c));
    return ~crc;
}

// LevelDB's log framing as W&B writes it: 32 KiB blocks from the file's start, fragments that never
// cross a block, fewer than 7 bytes at a block's end zero-filled.
std::string wandbFile(const std::vector<std::string>& records)
{
    std::string out(":W&B\xE1\xBE\x00", 7);
    for (const std::string& record : records) {
        size_t at = 0;
        bool first = true;
        do {
            const size_t left = 32768 - out.size() % 32768;
            if (left < 7) {
                out.append(left, '\0');
                continue;
            }
            const size_t take = std::min(record.size() - at, left - 7);
            const bool last = at + take == record.size();
            const uint8_t type = first && last ? 1 : first ? 2 : last ? 4 : 3;
            const std::string data = record.substr(at, take);
            const uint32_t crc = crc32Of(type, data);
            for (int i = 0; i < 4; ++i)
                out += char(crc >> (8 * i));
            out += char(take & 0xFF);
            out += char(take >> 8);
            out += char(type);
            out += data;
            at += take;
            first = false;
            if (last)
                break;
        } while (true);
    }
    return out;
}

// A record padded to `size` bytes, or empty when no padding gives exactly that size.
std::string recordOfSize(int64_t step, size_t size)
{
    const size_t base = historyRecord(step, "loss", "0.25", "p").size();
    if (size < base)
        return {};
    // Longer lengths take longer varints: correct the guess by what it missed.
    size_t pad = size - base + 1;
    for (int tries = 0; tries < 8 && pad > 0; ++tries) {
        std::string record = historyRecord(step, "loss", "0.25", std::string(pad, 'p'));
        if (record.size() == size)
            return record;
        pad = record.size() > size ? pad - std::min(pad, std::max<size_t>(1, (record.size() - size) / 2)) : pad + 1;
    }
    return {};
}

TEST(WandbRecordReader, EveryFragmentTypeAndABlocksPaddingAreRead)
{
    // Step 0: a record of 100 KB (FIRST, MIDDLE, MIDDLE, LAST). Then small records, one of which
    // ends its block with exactly 7 bytes to spare (the next record starts with an empty FIRST
    // fragment there, as W&B's writers do) and one with 3 (zero padding).
    std::vector<std::string> records{historyRecord(0, "loss", "1.5", std::string(100000, 'x')),
                                     historyRecord(1, "loss", "NaN")};
    bool sparedSeven = false, sparedThree = false;
    for (int64_t step = 2; step < 400; ++step) {
        const size_t left = 32768 - wandbFile(records).size() % 32768;
        std::string record = historyRecord(step, "loss", step == 150 ? "Infinity" : "0.25");
        for (size_t spare : {size_t(7), size_t(3)}) {
            bool& done = spare == 7 ? sparedSeven : sparedThree;
            if (!done && step > (spare == 7 ? 20 : 200) && left > 7 + spare + 64) {
                std::string sized = recordOfSize(step, left - 7 - spare);
                if (!sized.empty()) {
                    record = sized;
                    done = true;
                    break;
                }
            }
        }
        records.push_back(record);
    }
    ASSERT_TRUE(sparedSeven && sparedThree);
    const std::string file = wandbFile(records);
    auto log = readWandbRecordBytes("written.wandb", file);
    ASSERT_TRUE(log) << log.error();
    EXPECT_TRUE(log->warnings.empty()) << log->warnings.front();
    const auto* loss = findSeries(*log, "train/loss");
    ASSERT_NE(loss, nullptr);
    ASSERT_EQ(loss->size(), 400u);
    for (int64_t step = 0; step < 400; ++step)
        ASSERT_EQ((*loss)[size_t(step)].step, step);
    EXPECT_EQ((*loss)[0].value, 1.5);
    EXPECT_TRUE(std::isnan((*loss)[1].value));
    EXPECT_EQ((*loss)[150].value, INFINITY);
    EXPECT_EQ((*loss)[399].value, 0.25);

    // Cut anywhere, it reads what came before the cut and names the cut record.
    for (size_t cut : {size_t(7), size_t(5000), size_t(32768), size_t(40000), file.size() - 3}) {
        auto partial = readWandbRecordBytes("cut.wandb", file.substr(0, cut));
        if (!partial) {
            EXPECT_NE(partial.error().find("no history values"), std::string::npos) << partial.error();
            continue;
        }
        ASSERT_FALSE(partial->warnings.empty()) << cut;
        EXPECT_NE(partial->warnings.front().find("ends inside a record"), std::string::npos);
    }
    // One flipped byte in every block: never a crash, and what is intact is read.
    std::string damaged = file;
    for (size_t at = 100; at < damaged.size(); at += 32768)
        damaged[at] = char(damaged[at] ^ 0x5A);
    auto read = readWandbRecordBytes("damaged.wandb", damaged);
    ASSERT_TRUE(read) << read.error();
    EXPECT_FALSE(read->warnings.empty());
}

// ---- the syntaxes of one record ----------------------------------------------------------------

std::vector<std::pair<std::string, double>> pairsOf(std::string_view text)
{
    textrecord::Segment segment;
    textrecord::parseSegment(text, segment);
    std::vector<std::pair<std::string, double>> pairs;
    for (const auto& p : segment.pairs)
        pairs.emplace_back(std::string(p.name), p.absent ? -12345 : p.value);
    return pairs;
}

TEST(TextRecords, ReadsTheSyntaxesOfRealLogs)
{
    using Pairs = std::vector<std::pair<std::string, double>>;
    EXPECT_EQ(pairsOf("step:12 - actor/pg_loss:np.float64(0.0204) - actor/entropy:0.227"),
              (Pairs{{"step", 12}, {"actor/pg_loss", 0.0204}, {"actor/entropy", 0.227}}));
    const auto dict = pairsOf("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01, 'x': None}");
    ASSERT_EQ(dict.size(), 5u);
    EXPECT_TRUE(std::isnan(dict[1].second));
    EXPECT_EQ(dict[4], (std::pair<std::string, double>{"x", -12345})) << "None: logged without a value";
    EXPECT_EQ(pairsOf("(epoch: 1, iters: 400, time: 0.565) G_GAN: 3.302 G_L1: 21.309"),
              (Pairs{{"epoch", 1}, {"iters", 400}, {"time", 0.565}, {"G_GAN", 3.302}, {"G_L1", 21.309}}));
    EXPECT_EQ(pairsOf("         Train loss/train/total: 2.9980"), (Pairs{{"Train loss/train/total", 2.998}}));
    EXPECT_EQ(pairsOf("loss tensor(1.25, device='cuda:0', grad_fn=<NllLossBackward0>) lr 3e-4"),
              (Pairs{{"loss", 1.25}, {"lr", 3e-4}}));
    EXPECT_EQ(pairsOf("|    ep_rew_mean     | 123      |"), (Pairs{{"ep_rew_mean", 123}}));
    EXPECT_EQ(pairsOf("Num examples = 2,430"), (Pairs{{"Num examples", 2430}}));
    EXPECT_EQ(pairsOf("\x1b[36m(TaskRunner pid=2021996)\x1b[0m step:3 - loss:0.5"),
              (Pairs{{"TaskRunner pid", 2021996}, {"step", 3}, {"loss", 0.5}}))
        << "colour codes are no text (the pid is dropped by its name, below)";
    EXPECT_EQ(pairsOf("step:1/5100 train_loss:16.0026 step_avg:nanms"), (Pairs{{"step", 1}, {"train_loss", 16.0026}}));
    // Not values: an action's text, a progress bar's percentage...
    EXPECT_TRUE(pairsOf("Action: GOTO(NaN)").empty());
    EXPECT_TRUE(pairsOf("Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00]").empty());
    // ...and names that say so: a source line, a process id, prose, a unit, a name cut short.
    for (const char* name : {"logging.py", "WARNING utils.py", "TaskRunner pid", "and", "remaining items are", "Gb",
                             "R...", "x"})
        EXPECT_TRUE(textrecord::isNotAValueName(name)) << name;
    for (const char* name : {"loss", "train/loss", "lr", "Train loss/train/total", "ep_rew_mean", "epoch"})
        EXPECT_FALSE(textrecord::isNotAValueName(name)) << name;

    // Numbers as from_chars reads them, to the last bit, on the fast path and off it.
    std::vector<std::string> numbers = {"0.6914", "2e-05", "9.605263157894737e-07", "0.26893723011016846", "-3863464.0",
                                        "338649581355008.0", "1e-300", "123456789012345678", "0.1", "7.1E+00", "5e22",
                                        "5e23", "12345678.9", "0.123456789", "123456789012345", "1234567890123456",
                                        "00000000.5", "0.00000000123", "99999999999999.99", "-0.0"};
    // And 20,000 random decimals of 1 to 20 digits with and without exponents.
    std::mt19937_64 random(49);
    for (int i = 0; i < 20000; ++i) {
        std::string number = random() % 4 == 0 ? "-" : "";
        const int integerDigits = int(random() % 12), fractionDigits = int(random() % 12);
        for (int d = 0; d < integerDigits; ++d)
            number += char('0' + random() % 10);
        if (integerDigits == 0 || random() % 3 != 0) {
            number += integerDigits == 0 ? "0." : ".";
            for (int d = 0; d < fractionDigits; ++d)
                number += char('0' + random() % 10);
        }
        if (random() % 4 == 0)
            number += "e" + std::to_string(int(random() % 60) - 30);
        numbers.push_back(number);
    }
    for (const std::string& number : numbers) {
        double expected = 0;
        std::from_chars(number.data(), number.data() + number.size(), expected);
        const auto pairs = pairsOf("name: " + number);
        ASSERT_EQ(pairs.size(), 1u) << number;
        ASSERT_EQ(pairs[0].second, expected) << number;
    }

    textrecord::Segment bar;
    textrecord::parseSegment("Epoch 0:  45%|####5     | 450/1000 [00:10<00:12, 45.00it/s, loss=1.23, v_num=0]", bar);
    EXPECT_EQ(bar.barCount, 450);
    EXPECT_EQ(bar.barTotal, 1000);
    ASSERT_GE(bar.pairs.size(), 2u);
    EXPECT_EQ(bar.pairs[1].name, "loss");
}

// What is not a log is refused, with the reason.
TEST(LogReaderRegistry, RefusesWhatIsNotALogAndSaysWhy)
{
    ScratchFolder folder;
    const std::pair<const char*, std::string> files[] = {
        {"train.py", "import torch\nfor step in range(100):\n    loss = model(x)\n    print(f'step {step} loss {loss}')\n"},
        {"README.txt", "This repository trains a model.\nRun python train.py to start.\nSee the paper.\n"},
        {"config.json", "{\"lr\": 0.001, \"batch_size\": 32, \"epochs\": 10}\n"},
        {"blob.log", std::string("\x7f" "ELF\x02\x01\x01\x00\x00\x00", 10) + std::string(4000, '\x01')},
        {"settings.txt", "lr: 0.001\nbatch_size: 32\nwarmup: 100\nweight_decay: 0.01\n"},
        // /etc/passwd's shape: "x" between colons on every line is no metric.
        {"passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                   "bin:x:2:2:bin:/bin:/usr/sbin/nologin\nsys:x:3:3:sys:/dev:/usr/sbin/nologin\n"},
    };
    for (const auto& [name, text] : files) {
        folder.write(name, text);
        const SniffedFile sniffed = sniffLogFile(folder.path() + "/" + name);
        EXPECT_EQ(sniffed.reader, nullptr) << name << " read as " << sniffed.reader->id;
        EXPECT_NE(sniffed.refusal.find(name), std::string::npos) << sniffed.refusal;
    }
    EXPECT_NE(sniffLogFile(folder.path() + "/blob.log").refusal.find("binary data"), std::string::npos);
    EXPECT_NE(notALogByName(folder.path() + "/train.py").find("source code"), std::string::npos);
}

// Documentation whose numbers stand in prose and tables (a README's results, its benchmark table)
// is no training log, however many lines hold a name and a number: a real README of another
// project, and nanscope's own docs. The real logs pasted into Markdown files (the .md fixtures
// of RealLogStructure) still open.
TEST(LogReaderRegistry, ADocumentsNumbersInProseAndTablesAreNoTrainingLog)
{
    for (const std::string& path :
         {fixture("sophgo__tpu_compiler__alphapose-readme-results-not-a-log/README.md"),
          fixture("../../../docs/scan.md"), fixture("../../../README.md")}) {
        const SniffedFile sniffed = sniffLogFile(path);
        EXPECT_EQ(sniffed.reader, nullptr) << path << " read as " << sniffed.reader->id;
        EXPECT_NE(sniffed.refusal.find("numbers in prose or tables"), std::string::npos) << sniffed.refusal;
        auto run = openRun(path);
        ASSERT_FALSE(run) << path << " opened as a run";
        EXPECT_NE(run.error().find("no training records"), std::string::npos) << run.error();
    }
}

// A line of words read as a spaced table's header, then a line of as many cells whose first is a
// number and whose second is not: that number is no row, and leaves nothing behind. It did, and the
// next line's table flush named it from names it had none of, reading freed or absent strings
// (ASan, on two lines of nanscope's own README, here as they stood). The records after are read.
TEST(TextRecordLogReader, APartRowOfASpacedTableLeavesNothingBehind)
{
    ScratchFolder folder;
    std::string text = "optimizer-reset rule reads one more column only where it was logged).\n"
                       "289.1 ms), bench_scan (553.5 ms, 1.29x its streaming baseline), bench_run_reader, bench_sources,\n";
    for (int step = 0; step < 12; ++step)
        text += "step " + std::to_string(step) + " loss " + std::to_string(1.0 / (step + 1)) + "\n";
    folder.write("mixed.log", text);
    auto log = readTextRecordLog(folder.path() + "/mixed.log");
    ASSERT_TRUE(log) << log.error();
    ASSERT_NE(findSeries(*log, "loss"), nullptr);
    EXPECT_EQ(findSeries(*log, "loss")->size(), 12u);
}

// Hostile input: bounded, never a crash, a hang or an unbounded allocation.
TEST(TextRecordLogReader, HostileInputIsReadInBoundedMemory)
{
    ScratchFolder folder;
    // A 3 MiB line with no end, before real records: skipped unread, and said.
    std::string text(3u << 20, 'a');
    text += "\n";
    for (int step = 0; step < 5; ++step)
        text += "step " + std::to_string(step) + " loss " + std::to_string(1.0 / (step + 1)) + "\n";
    folder.write("long.log", text);
    auto log = readTextRecordLog(folder.path() + "/long.log");
    ASSERT_TRUE(log) << log.error();
    EXPECT_EQ(findSeries(*log, "loss")->size(), 5u);
    ASSERT_FALSE(log->warnings.empty());
    EXPECT_NE(log->warnings.front().find("longer than 1 MiB"), std::string::npos);

    // 200,000 lines that match nothing: a clear refusal.
    std::string noise;
    for (int i = 0; i < 200000; ++i)
        noise += "WARNING: something happened here\n";
    folder.write("noise.log", noise);
    auto refused = readTextRecordLog(folder.path() + "/noise.log");
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("no training records"), std::string::npos) << refused.error();

    // Lines of 10,000 keys each: every key a series, nothing lost.
    std::string wide;
    for (int step = 0; step < 3; ++step) {
        wide += "{\"step\": " + std::to_string(step);
        for (int k = 0; k < 10000; ++k)
            wide += ", \"m" + std::to_string(k) + "\": " + std::to_string(k + step);
        wide += "}\n";
    }
    folder.write("wide.jsonl", wide);
    const SniffedFile sniffed = sniffLogFile(folder.path() + "/wide.jsonl");
    ASSERT_NE(sniffed.reader, nullptr) << sniffed.refusal;
    auto read = sniffed.reader->read(folder.path() + "/wide.jsonl");
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(read->series.size(), 10000u);
    EXPECT_EQ(findSeries(*read, "m9999")->back().value, 10001);
}

} // namespace
} // namespace nanscope

namespace nanscope {
namespace {

// JSON lines are read by a plain scan when a line is a flat object, and by RapidJSON otherwise:
// both read the same values, and what is not JSON is refused as before.
TEST(JsonLinesLogReader, ThePlainScanAndTheParserReadTheSameValues)
{
    ScratchFolder folder;
    const std::string text = R"({"step": 0, "loss": 1.5, "lr": 1e-05, "note": "warm-up", "ok": true, "x": null})"
                             "\n"
                             R"({"step": 1, "loss": NaN, "lr": 2E-5, "note": "with \"escape\"", "ok": false})"
                             "\n"
                             R"({"step": 2, "loss": Infinity, "lr": 3e-5, "train": {"acc": 0.5}})"
                             "\n"
                             R"({"step": 3, "loss": -Infinity, "lr": 0.26893723011016846})"
                             "\n"
                             R"({"step": 4, "loss": 01, "lr": 4e-5})"
                             "\n"
                             R"({"step": 5, "loss": 0.25, "lr": 5e-5} trailing)"
                             "\n"
                             R"(  {"step" : 6 , "loss" : -0.0 , "lr" : 6e-5 }  )"
                             "\n";
    const std::string path = folder.write("log.jsonl", text);
    auto log = readJsonLinesLog(path);
    ASSERT_TRUE(log) << log.error();
    const auto* loss = findSeries(*log, "loss");
    ASSERT_NE(loss, nullptr);
    std::vector<int64_t> steps;
    for (const ScalarPoint& p : *loss)
        steps.push_back(p.step);
    EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 6})) << "lines 4 and 5 are not JSON";
    EXPECT_EQ((*loss)[0].value, 1.5);
    EXPECT_TRUE(std::isnan((*loss)[1].value)) << "read by RapidJSON: the note has an escape";
    EXPECT_EQ((*loss)[2].value, INFINITY) << "read by RapidJSON: a nested object";
    EXPECT_EQ((*loss)[3].value, -INFINITY);
    EXPECT_TRUE(std::signbit((*loss)[4].value));
    const auto* lr = findSeries(*log, "lr");
    ASSERT_NE(lr, nullptr);
    EXPECT_EQ((*lr)[1].value, 2e-5);
    EXPECT_EQ((*lr)[3].value, 0.26893723011016846);
    ASSERT_FALSE(log->warnings.empty());
    EXPECT_NE(log->warnings.front().find("2 lines are not JSON objects"), std::string::npos) << log->warnings.front();
}

} // namespace
} // namespace nanscope
