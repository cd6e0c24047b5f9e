// The step lines training scripts print (core/importers/StepTextLogReader.h), read from excerpts of
// real public logs. Each excerpt is a few lines, verbatim, with where it was read:
//
// [build-nanogpt] logbob0401/build-nanogpt, log/rec_202411011055_basically_works.txt at
//   daa8e8d5c6093a5cad567ea76b0016b4af9eb4d9 (karpathy/build-nanogpt's train_gpt2.py format): steps
//   0-2 and 6323-6326, where "norm: inf" is a GradScaler overflow step with a finite loss.
// [llm.c] karpathy/llm.c issue #796 ("wrong MFU with blackwell"), train_gpt2cu output: loss and norm
//   followed by "(+nanz)", "-100.0% bf16 MFU"; anthonix/llm.c issue #2: every loss and norm "nan".
// [modded-nanogpt] KellerJordan/modded-nanogpt,
//   records/track_1_short/2024-10-14_ModernArch/dabaaddd-237c-4ec9-939d-6608a9ed5e27.txt at
//   f411b3d346aa52d3504324ca93c230fd84c6c07f: the log begins with the training script's source and
//   an nvidia-smi table; "step_avg:nanms" until the timer starts. (The script lines below are our
//   own, written in the shape of such a dump, not the record's code.)
// [nanoGPT] karpathy/nanoGPT issue #178 (train.py "iter N: loss X, time Yms, mfu Z%"), issue #215
//   (a time-stamped, quoted copy of such lines), and a nanoGPT README's banner with
//   "step 0: train loss 4.1979, val loss 4.2041" (read-file id 55600505568); the nanoGPT fixture
//   puts lines of that banner before three iter lines of issue #178.
// [fairseq] facebookresearch/fairseq issues: #2332 (train_inner lines of a GPU run, num_updates
//   100-300), #2404 (an overflow NOTE beside a train_inner line whose loss_scale is averaged),
//   #1895 (an exploding run: gnorm 55 -> 156, loss_scale 0, overflow NOTEs), #940 (the format
//   before fairseq 0.10, with a valid line), #3185 (the FloatingPointError text).
// [torchtitan] pytorch/torchtitan pull request #1287: "[rank0]:[titan] ... - root - INFO - step: 200
//   loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856 ...".

#include "LogFileTestSupport.h"

#include "core/open/OpenRun.h"
#include "core/importers/StepTextLogReader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>

using namespace nanscope;

namespace {

const std::vector<ScalarPoint>& series(const ScalarLog& log, const std::string& name)
{
    static const std::vector<ScalarPoint> none;
    auto it = log.series.find(name);
    return it == log.series.end() ? none : it->second;
}

std::string writeLog(const test::TempFolder& folder, const std::string& name, const std::string& text)
{
    const std::string path = folder.file(name);
    test::writeBytes(path, text);
    return path;
}

} // namespace

TEST(StepTextLogReader, BuildNanogptLinesWithAnOverflowStep)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "train.log", R"(step     0 | loss: 10.955598 | lr 1.3986e-07 | norm: 59.6796 | dt: 27239.95ms | tok/sec: 19247.02
step     1 | loss: 10.947883 | lr 2.7972e-07 | norm: 60.1593 | dt: 2228.73ms | tok/sec: 235240.78
step     2 | loss: 10.930889 | lr 4.1958e-07 | norm: 59.9464 | dt: 2201.13ms | tok/sec: 238190.63
step  6323 | loss: 3.618929 | lr 8.0820e-05 | norm: 3.8017 | dt: 2249.69ms | tok/sec: 233049.24
step  6324 | loss: 3.598622 | lr 8.0813e-05 | norm: 3.9064 | dt: 2429.87ms | tok/sec: 215767.53
step  6325 | loss: 3.593431 | lr 8.0807e-05 | norm: inf | dt: 2212.87ms | tok/sec: 236926.31
step  6326 | loss: 3.687801 | lr 8.0801e-05 | norm: 3.9266 | dt: 2245.06ms | tok/sec: 233529.42
)");
    ASSERT_TRUE(looksLikeStepTextLog(log));
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "loss");
    ASSERT_EQ(loss.size(), 7u);
    EXPECT_EQ(loss[0].step, 0);
    EXPECT_DOUBLE_EQ(loss[0].value, 10.955598);
    EXPECT_EQ(loss[5].step, 6325);
    const auto& norm = series(*read, "norm");
    ASSERT_EQ(norm.size(), 7u);
    EXPECT_TRUE(std::isinf(norm[5].value));
    EXPECT_DOUBLE_EQ(series(*read, "lr")[1].value, 2.7972e-07);
    EXPECT_DOUBLE_EQ(series(*read, "dt")[0].value, 27239.95) << "milliseconds, as logged";
    EXPECT_DOUBLE_EQ(series(*read, "tok/sec")[2].value, 238190.63);
    ASSERT_EQ(read->events.size(), 1u) << "norm: inf beside a finite loss is a skipped fp16 step";
    EXPECT_EQ(read->events[0].step, 6325);
    EXPECT_EQ(read->events[0].kind, "skipped_step");
}

TEST(StepTextLogReader, LlmcLinesIgnoreTheZScoresAndUnnamedNumbers)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "llmc.txt", R"(USE_CUDNN=1 make all

./train_gpt2cu

---
step   61/74 | loss 3.208939 (+nanz)| norm 1.4800 (+nanz)| lr 3.00e-04 | 44.57 ms | -100.0% bf16 MFU | 91886 tok/s
step   62/74 | loss 3.464926 (+nanz)| norm 1.3662 (+nanz)| lr 3.00e-04 | 44.57 ms | -100.0% bf16 MFU | 91886 tok/s
step   63/74 | loss 3.402215 (+nanz)| norm 1.3542 (+nanz)| lr 3.00e-04 | 44.58 ms | -100.0% bf16 MFU | 91886 tok/s
)");
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_EQ(loss[0].step, 61) << "step 61/74 is step 61";
    EXPECT_DOUBLE_EQ(loss[2].value, 3.402215);
    for (const auto& p : loss)
        EXPECT_TRUE(std::isfinite(p.value)) << "(+nanz) is no NaN loss";
    EXPECT_DOUBLE_EQ(series(*read, "norm")[1].value, 1.3662);
    EXPECT_DOUBLE_EQ(series(*read, "lr")[0].value, 3.00e-04);
    EXPECT_EQ(read->series.size(), 3u) << "only named values: no 'ms', 'MFU' or 'tok/s' series";
    EXPECT_TRUE(read->events.empty());
}

TEST(StepTextLogReader, LlmcNanLossAndNormAreNaN)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "nan.log", R"(step   10/74 | loss     nan (+nanz)| norm    nan (+nanz)| lr 3.00e-04 | 36.58 ms | 9.2% bf16 MFU | 112241 tok/s
step   11/74 | loss     nan (+nanz)| norm    nan (+nanz)| lr 3.00e-04 | 36.51 ms | 9.2% bf16 MFU | 112236 tok/s
step   12/74 | loss     nan (+nanz)| norm    nan (+nanz)| lr 3.00e-04 | 36.80 ms | 9.1% bf16 MFU | 112128 tok/s
)");
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(series(*read, "loss").size(), 3u);
    EXPECT_TRUE(std::isnan(series(*read, "loss")[0].value)) << "a NaN value is data";
    EXPECT_TRUE(std::isnan(series(*read, "norm")[2].value));
    EXPECT_TRUE(read->events.empty()) << "the loss is NaN too: no loss-scaler skip";
}

TEST(StepTextLogReader, ModdedNanogptAfterTheScriptsSourceWithPlaceholders)
{
    test::TempFolder folder;
    std::string text = "====================================================================================================\n"
                       "import os\nimport time\n";
    // The script's own source, as such logs begin: hundreds of lines, some of which look like log lines.
    for (int i = 0; i < 300; ++i)
        text += "    x_" + std::to_string(i) + " = step + " + std::to_string(i) + "  # not a log line\n";
    text += R"(        log(f"step:{n}/{total} train_loss:{value:.4f} train_time:{elapsed:.0f}ms")
|    7   N/A  N/A     67793      C   /usr/bin/python3                           5582MiB |
+---------------------------------------------------------------------------------------+

====================================================================================================
step:0/5100 val_loss:16.0058 train_time:278ms step_avg:nanms
step:1/5100 train_loss:16.0026 train_time:42703ms step_avg:nanms
step:2/5100 train_loss:9.4947 train_time:53466ms step_avg:nanms
step:3/5100 train_loss:8.7243 train_time:53645ms step_avg:nanms
)";
    const std::string log = writeLog(folder, "dabaaddd.txt", text);
    ASSERT_TRUE(looksLikeStepTextLog(log)) << "found past the printed source";
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "train_loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_EQ(loss[0].step, 1);
    EXPECT_DOUBLE_EQ(loss[1].value, 9.4947);
    ASSERT_EQ(series(*read, "val_loss").size(), 1u);
    EXPECT_EQ(series(*read, "val_loss")[0].step, 0);
    EXPECT_TRUE(series(*read, "step_avg").empty()) << "nanms is a placeholder, not a NaN metric";
    EXPECT_EQ(series(*read, "train_time").size(), 4u);
}

TEST(StepTextLogReader, NanogptIterLinesAndEvaluationLines)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "out.txt", R"(tokens per iteration will be: 16,384
found vocab_size = 65
Initializing a new model from scratch
number of parameters: 10.65M
using fused AdamW: False
step 0: train loss 4.1979, val loss 4.2041
iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%
iter 10: loss 3.2202, time 893.76ms, mfu 16.68%
iter 20: loss 2.7697, time 894.88ms, mfu 16.67%
)");
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "loss");
    ASSERT_EQ(loss.size(), 3u) << "the evaluation's train loss does not join the step loss";
    EXPECT_DOUBLE_EQ(loss[0].value, 4.2648);
    EXPECT_DOUBLE_EQ(series(*read, "val loss")[0].value, 4.2041);
    EXPECT_DOUBLE_EQ(series(*read, "train_loss_eval")[0].value, 4.1979);
    EXPECT_DOUBLE_EQ(series(*read, "mfu")[1].value, 16.68);
}

TEST(StepTextLogReader, TimestampedQuotedAndLoggerPrefixedLines)
{
    test::TempFolder folder;
    const std::string quoted = writeLog(folder, "issue.log", R"(> 2023-03-22 09:30:39 iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%
> 
> 2023-03-22 09:30:50 iter 2930: loss 3.9408, time 1097.30ms, mfu 15.34%
> 
> 2023-03-22 09:31:01 iter 2940: loss 3.9994, time 1097.68ms, mfu 15.34%
)");
    auto read = readStepTextLog(quoted);
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(series(*read, "loss").size(), 3u);
    EXPECT_EQ(series(*read, "loss")[1].step, 2930);

    const std::string titan = writeLog(folder, "titan.log", R"([rank0]:[titan] 2025-06-16 22:30:48,735 - root - INFO - [GC] Peforming periodical GC collection. 0.06 seconds.
[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%
[rank0]:[titan] 2025-06-16 22:30:50,758 - root - INFO - Dumping profiler traces at step 200
[rank0]:[titan] 2025-06-16 22:31:04,970 - root - INFO - step: 210  loss:  6.0388  memory: 49.66GiB(52.28%)  tps: 5,593  tflops: 323.92  mfu: 32.75%
[rank0]:[titan] 2025-06-16 22:31:18,934 - root - INFO - step: 220  loss:  6.0348  memory: 49.66GiB(52.28%)  tps: 5,868  tflops: 339.82  mfu: 34.36%
)");
    auto titanLog = readStepTextLog(titan);
    ASSERT_TRUE(titanLog) << titanLog.error();
    ASSERT_EQ(series(*titanLog, "loss").size(), 3u);
    EXPECT_EQ(series(*titanLog, "loss")[2].step, 220);
    EXPECT_DOUBLE_EQ(series(*titanLog, "tps")[0].value, 5856) << "a thousands separator";
    EXPECT_TRUE(series(*titanLog, "memory").empty()) << "GiB is no unit of a plotted value here";
}

TEST(StepTextLogReader, OpenRunReadsAStepLogAsARun)
{
    test::TempFolder folder;
    std::string text;
    for (int step = 0; step < 50; ++step)
        text += "step " + std::to_string(step) + " | loss: " + std::to_string(3.0 - step * 0.01) +
                " | lr 6.0000e-04 | norm: 0.4521 | dt: 312.45ms | tok/sec: 52000.1\n";
    writeLog(folder, "train.log", text);
    auto run = openRun(folder.path());
    ASSERT_TRUE(run) << run.error();
    const auto* scalars = (*run)->info().table("scalars");
    ASSERT_NE(scalars, nullptr);
    EXPECT_EQ(scalars->rows, 50);
    const auto& names = scalars->datasets;
    EXPECT_TRUE(std::count(names.begin(), names.end(), "loss")) << "loss";
    EXPECT_TRUE(std::count(names.begin(), names.end(), "grad_norm")) << "norm is the gradient norm";
    EXPECT_TRUE(std::count(names.begin(), names.end(), "lr"));
}

TEST(StepTextLogReader, BinaryAndEndlessFilesAreRefusedOrBounded)
{
    test::TempFolder folder;
    std::string binary = "step 1 | loss 2.0\n";
    binary += std::string("\0\x01\x02\xff", 4);
    binary += "step 2 | loss 2.0\nstep 3 | loss 2.0\n";
    EXPECT_FALSE(looksLikeStepTextLog(writeLog(folder, "binary.log", binary)));
    // One "line" of 8 MiB and a million lines that are not step lines: read through, bounded.
    std::string noise(size_t(8) << 20, 'x');
    noise += "\n";
    for (int i = 0; i < 1'000'000; ++i)
        noise += "epoch done\n";
    noise += "step 7 | loss: 1.5\n";
    auto read = readStepTextLog(writeLog(folder, "noise.log", noise));
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(series(*read, "loss").size(), 1u);
    EXPECT_EQ(series(*read, "loss")[0].step, 7);
    auto none = readStepTextLog(writeLog(folder, "none.log", "hello\nworld\n"));
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().find("none.log"), std::string::npos);
    EXPECT_NE(none.error().find("no training step lines"), std::string::npos);
}

// A single log file that no reader takes said "nanscope: " and nothing else: the readers' errors
// were moved into the run's warnings before the first was returned.
TEST(StepTextLogReader, AFileNoReaderTakesIsAnErrorThatSaysWhy)
{
    test::TempFolder folder;
    // Numbers with names but nothing that keys a step (no step N, iteration N or num_updates).
    const std::string log = writeLog(folder, "fairseq.log",
        "2020-07-17 07:11:02 | INFO | fairseq_cli.train | model transformer, criterion CrossEntropyCriterion, "
        "num. model params: 44168192, lr=2.8e-05\n");
    auto run = openRun(log);
    ASSERT_FALSE(run);
    EXPECT_NE(run.error().find("fairseq.log"), std::string::npos) << run.error();
    EXPECT_GT(run.error().size(), log.size() + 10) << "the error says why: " << run.error();
}

// Issue 26: `nanscope info` on a folder it cannot read names the files it looked at and why each
// is no log, so that a person knows what to convert.
TEST(StepTextLogReader, AFolderWithNoRunNamesEachFileAndWhy)
{
    test::TempFolder folder;
    writeLog(folder, "notes.txt", "nothing here\n");
    writeLog(folder, "config.json", "{\"lr\": 0.1}\n");
    writeLog(folder, "run-abc.wandb", std::string("\x00\x01", 2));
    auto run = openRun(folder.path());
    ASSERT_FALSE(run);
    // One line a file, each with the reason of the reader its syntax is closest to.
    for (const char* part : {"\n  ", "notes.txt: text, but no name holds a number",
                             "config.json: one JSON object (a summary or a configuration), not a log",
                             "run-abc.wandb: no :W&B header: damaged, or not a W&B run file"})
        EXPECT_NE(run.error().find(part), std::string::npos) << part << "\n" << run.error();
    EXPECT_EQ(std::count(run.error().begin(), run.error().end(), '\n'), 3) << run.error();
}

// fairseq keys a step by num_updates, not by the batch counter "100 / 2952087" before it.
TEST(StepTextLogReader, FairseqTrainInnerLinesAreKeyedByTheirUpdateCount)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "train.log", R"(2020-07-17 04:08:14 | INFO | train_inner | epoch 001:    100 / 2952087 loss=16.348, ppl=83437.5, wps=8640.2, ups=4.66, wpb=1854, bsz=2, num_updates=100, lr=1e-06, gnorm=4.215, loss_scale=128, train_wall=22, wall=120
2020-07-17 04:08:36 | INFO | train_inner | epoch 001:    200 / 2952087 loss=14.736, ppl=27279.9, wps=8800.8, ups=4.69, wpb=1878.2, bsz=2, num_updates=200, lr=2e-06, gnorm=2.849, loss_scale=128, train_wall=21, wall=141
2020-07-17 04:08:57 | INFO | train_inner | epoch 001:    300 / 2952087 loss=13.761, ppl=13882.4, wps=8737.9, ups=4.68, wpb=1868.8, bsz=2, num_updates=300, lr=3e-06, gnorm=2.349, loss_scale=128, train_wall=21, wall=163
2020-08-01 12:39:16 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 1024.0
2020-08-01 12:39:39 | INFO | train_inner | epoch 001:   3615 / 6547 loss=0.439, nll_loss=0.001, accuracy=87.9, wps=82565, ups=2.66, wpb=31075.5, bsz=64, num_updates=3600, lr=9e-06, gnorm=3.952, loss_scale=1399, train_wall=38, wall=1353
)");
    ASSERT_TRUE(looksLikeStepTextLog(log));
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "loss");
    ASSERT_EQ(loss.size(), 4u);
    EXPECT_EQ(loss[0].step, 100);
    EXPECT_DOUBLE_EQ(loss[0].value, 16.348);
    EXPECT_EQ(loss[3].step, 3600) << "num_updates, not the batch counter 3615";
    const auto& gnorm = series(*read, "gnorm");
    ASSERT_EQ(gnorm.size(), 4u);
    EXPECT_DOUBLE_EQ(gnorm[1].value, 2.849);
    EXPECT_DOUBLE_EQ(series(*read, "loss_scale")[3].value, 1399);
    EXPECT_TRUE(series(*read, "num_updates").empty()) << "the step key is not a series";
    EXPECT_TRUE(series(*read, "epoch").empty());
    ASSERT_EQ(read->events.size(), 1u);
    EXPECT_EQ(read->events[0].kind, "loss_scale_decrease");
    EXPECT_NE(read->events[0].message.find("1024"), std::string::npos) << read->events[0].message;
}

TEST(StepTextLogReader, FairseqBeforeVersion010WithAValidLineAndAnExplodingEnd)
{
    test::TempFolder folder;
    const std::string log = writeLog(folder, "train.log", R"(| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5, wpb=104928, bsz=5325, num_updates=445, lr=8.90889e-05, gnorm=1.543, clip=0%, oom=0, loss_scale=2.000, wall=882, train_wall=756
| epoch 001:    500 / 1891 loss=11.346, nll_loss=10.678, ppl=1637.83, wps=53351, ups=0.5, wpb=104872, bsz=5322, num_updates=495, lr=9.90876e-05, gnorm=1.507, clip=0%, oom=0, loss_scale=2.000, wall=973, train_wall=840
| epoch 001:    600 / 1891 loss=11.039, nll_loss=10.320, ppl=1278.29, wps=53936, ups=0.5, wpb=104812, bsz=5310, num_updates=595, lr=0.000119085, gnorm=1.445, clip=0%, oom=0, loss_scale=2.000, wall=1156, train_wall=1010
| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl 118.06 | num_updates 600
2020-03-23 11:38:13 | INFO | train | epoch 002 | loss 9.803 | nll_loss 8.89 | ppl 474.37 | wps 31194.9 | ups 0.07 | wpb 430468 | bsz 14485.4 | num_updates 695 | lr 0.00017375 | gnorm 55.005 | loss_scale 0 | train_wall 4512 | wall 9786
2020-03-23 11:39:44 | INFO | train_inner | epoch 003:      5 / 356 loss=9.44, nll_loss=8.44, ppl=347.28, wps=30690.8, ups=0.07, wpb=427295, bsz=14390.4, num_updates=700, lr=0.000175, gnorm=156.036, loss_scale=0, train_wall=1281, wall=9877
2020-03-23 11:41:18 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 0.00048828125
2020-03-23 11:48:04 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 0.000244140625
> FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.
)");
    auto read = readStepTextLog(log);
    ASSERT_TRUE(read) << read.error();
    const auto& loss = series(*read, "loss");
    ASSERT_EQ(loss.size(), 4u) << "the epoch summary at update 695 is not a step";
    EXPECT_EQ(loss[0].step, 445);
    EXPECT_EQ(loss[3].step, 700);
    EXPECT_DOUBLE_EQ(series(*read, "gnorm")[3].value, 156.036);
    const auto& valid = series(*read, "valid_loss");
    ASSERT_EQ(valid.size(), 1u);
    EXPECT_EQ(valid[0].step, 600);
    EXPECT_DOUBLE_EQ(valid[0].value, 8.11425);
    ASSERT_EQ(read->events.size(), 3u);
    EXPECT_EQ(read->events[0].step, 700);
    EXPECT_EQ(read->events[2].kind, "note");
    EXPECT_NE(read->events[2].message.find("minimum loss scale"), std::string::npos);
}
