// Replays of the demo runs' saved steps: the culprit op, its module, its inputs, the samples.
#include "TestRuns.h"

#include "core/torch/Replay.h"
#include "core/replay/BlowupBaseline.h"
#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace nanscope;

namespace {

ReplayOptions demoStep(const std::string& run, int64_t step)
{
    ReplayOptions options;
    options.checkpoint = test::demoRun(run) + "/checkpoints/" + runformat::stepFileStem(step) + ".pt";
    options.batch = test::demoRun(run) + "/batches/" + runformat::stepFileStem(step) + ".pt";
    options.lossName = "cross_entropy";
    return options;
}

// Saves the TorchScript model and a batch of these inputs (no targets: the model returns its loss)
// to `dir`, and replays them.
Result<ReplayResult> replayOnInputs(torch::jit::Module& model, const torch::Tensor& inputs, const test::ScratchDir& dir)
{
    model.save(dir / "model.pt");
    c10::impl::GenericDict batch(c10::StringType::get(), c10::AnyType::get());
    batch.insert("inputs", inputs);
    const auto bytes = torch::pickle_save(c10::IValue(batch));
    std::ofstream(dir / "batch.pt", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    ReplayOptions options;
    options.checkpoint = dir / "model.pt";
    options.batch = dir / "batch.pt";
    return replayStep(options);
}

} // namespace

TEST(Replay, DivisionByZeroIsTracedToTheDivOfTheNormLayerAndOneSample)
{
    ReplayOptions options = demoStep("division-by-zero", 180);
    options.bisect = true;
    auto result = replayStep(options);
    ASSERT_TRUE(result) << result.error();
    EXPECT_EQ(result->step, 180);
    EXPECT_FALSE(result->lossFinite);
    ASSERT_TRUE(result->firstNonfinite);
    const ReplayOp& culprit = *result->firstNonfinite;
    EXPECT_EQ(culprit.op, "aten::div");
    EXPECT_EQ(culprit.module, "norm");
    EXPECT_FALSE(culprit.source.empty());
    ASSERT_EQ(culprit.inputs.size(), 2u);
    EXPECT_FALSE(hasNonfinite(culprit.inputs[0]) || hasNonfinite(culprit.inputs[1])) << "finite in, non-finite out";
    ASSERT_TRUE(culprit.inputs[1] && culprit.output);
    EXPECT_EQ(culprit.inputs[1]->min, 0.0) << "the divisor range shows the zero";
    EXPECT_EQ(culprit.output->nan, 16) << "one sample's 16 features";
    EXPECT_EQ(result->badSamples, std::vector<int64_t>{5});
    ASSERT_TRUE(result->firstNonfiniteGrad);
    EXPECT_FALSE(result->firstNonfiniteGrad->gradFunction.empty());
    ASSERT_FALSE(result->params.empty());
    EXPECT_EQ(result->params.front().name, "fc1.weight");
    ASSERT_TRUE(result->params.front().grad);
    EXPECT_GT(result->params.front().grad->nan, 0);
    // Ops come in execution order, each with its module.
    ASSERT_GE(result->ops.size(), 5u);
    EXPECT_EQ(result->ops.front().module, "norm");
    EXPECT_EQ(result->ops.back().module, "fc3");
}

TEST(Replay, HealthyStepIsFiniteEverywhere)
{
    auto result = replayStep(demoStep("division-by-zero", 150));
    ASSERT_TRUE(result) << result.error();
    EXPECT_FALSE(result->firstNonfinite);
    EXPECT_FALSE(result->firstNonfiniteGrad);
    EXPECT_TRUE(result->lossFinite);
    EXPECT_GT(result->loss, 0);
}

TEST(Replay, BisectionFindsTheNanSampleThroughBatchNorm)
{
    ReplayOptions options = demoStep("batchnorm-poisoned", 200);
    options.bisect = true;
    auto result = replayStep(options);
    ASSERT_TRUE(result) << result.error();
    EXPECT_EQ(result->badSamples, std::vector<int64_t>{2}) << "one-sample batches cannot run BatchNorm in training mode";
    ASSERT_TRUE(result->firstNonfinite);
    EXPECT_EQ(result->firstNonfinite->module, "fc1") << "the NaN input enters at the first layer";
}

TEST(Replay, BisectionCallsASampleThatBlowsTheLossUpBadThoughEveryValueIsFinite)
{
    // Issue 51: the sudden blow-up's step 230 holds rows of 1e9 fill values in a float32 run. The
    // forward stays finite, so a bisection that judged only NaN and Inf answered "none". Judged as
    // triage judges a replay (a loss or gradient norm 10x the run's typical), the fill rows are bad.
    ReplayOptions options = demoStep("sudden-blowup", 230);
    options.bisect = true;
    auto finiteOnly = replayStep(options);
    ASSERT_TRUE(finiteOnly) << finiteOnly.error();
    EXPECT_TRUE(finiteOnly->badSamples.empty()) << "no baseline: nothing is non-finite";

    auto reader = RunReader::open(test::demoRun("sudden-blowup"));
    ASSERT_TRUE(reader) << reader.error();
    options.blowupBaseline = blowupBaselineBefore(**reader, 230);
    ASSERT_TRUE(options.blowupBaseline.loss && options.blowupBaseline.gradNorm);
    auto result = replayStep(options);
    ASSERT_TRUE(result) << result.error();
    ASSERT_FALSE(result->badSamples.empty());
    for (int64_t sample : result->badSamples)
        EXPECT_TRUE(sample == 3 || sample == 11 || sample == 17 || sample == 29) << "sample " << sample
                                                                                  << " holds no fill value";
    EXPECT_NE(result->badSampleCriterion.find("a loss over 10x the run's typical"), std::string::npos)
        << result->badSampleCriterion;

    // The run trains in float32: the advice on values past float16's range must not tell it to
    // train in float32.
    bool headroom = false;
    for (const auto& finding : result->findings)
        if (finding.signal == ReplaySignal::Float16Headroom) {
            headroom = true;
            EXPECT_NE(finding.cause.find("computed in float32"), std::string::npos) << finding.cause;
            EXPECT_EQ(finding.suggestion.find("Train these ops in bfloat16 or float32"), std::string::npos)
                << finding.suggestion;
        }
    EXPECT_TRUE(headroom);
}

TEST(Replay, EvalModeShowsThePoisonedRunningStatistics)
{
    ReplayOptions options = demoStep("batchnorm-poisoned", 250);
    options.eval = true;
    auto result = replayStep(options);
    ASSERT_TRUE(result) << result.error();
    ASSERT_TRUE(result->firstNonfinite);
    EXPECT_EQ(result->firstNonfinite->op, "aten::batch_norm");
    EXPECT_EQ(result->firstNonfinite->module, "bn1");
    EXPECT_FALSE(result->notes.empty()) << "the NaN came from the model's state, and the replay says so";

    options.eval = false; // training mode uses batch statistics: the same step is finite
    auto train = replayStep(options);
    ASSERT_TRUE(train);
    EXPECT_FALSE(train->firstNonfinite);
}

TEST(Replay, LayerFilterListsOnlyThatModule)
{
    ReplayOptions options = demoStep("division-by-zero", 180);
    options.layerPrefix = "fc2";
    auto result = replayStep(options);
    ASSERT_TRUE(result);
    ASSERT_FALSE(result->ops.empty());
    ASSERT_TRUE(result->firstNonfinite) << "the culprit is found over the whole model";
    EXPECT_EQ(result->firstNonfinite->module, "norm");
    bool listsCulprit = false;
    for (const auto& op : result->ops) {
        if (op.index == result->firstNonfinite->index) {
            listsCulprit = true; // kept, so that the filtered table still shows where the NaN was born
            continue;
        }
        EXPECT_EQ(op.module, "fc2");
    }
    EXPECT_TRUE(listsCulprit) << "the filter hid the first non-finite op";
}

TEST(Replay, PrecisionWhatIfRunsInBfloat16AndFloat64)
{
    for (const char* dtype : {"bfloat16", "float64"}) {
        ReplayOptions options = demoStep("division-by-zero", 180);
        options.dtype = dtype;
        auto result = replayStep(options);
        ASSERT_TRUE(result) << dtype << ": " << result.error();
        ASSERT_TRUE(result->firstNonfinite) << dtype;
        EXPECT_EQ(result->firstNonfinite->module, "norm");
        ASSERT_TRUE(result->ops.front().output);
        EXPECT_EQ(result->ops.front().output->dtype, dtype == std::string("bfloat16") ? DType::BFloat16 : DType::Float64);
    }
}

TEST(Replay, WrongFilesGiveClearErrors)
{
    ReplayOptions swapped = demoStep("division-by-zero", 180);
    std::swap(swapped.checkpoint, swapped.batch);
    auto result = replayStep(swapped);
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find(swapped.batch), std::string::npos) << result.error();

    ReplayOptions otherModel = demoStep("division-by-zero", 180);
    otherModel.batch = test::demoRun("gradual-blowup") + "/batches/" + runformat::stepFileStem(100) + ".pt";
    otherModel.lossName = "mse";
    auto mismatch = replayStep(otherModel);
    ASSERT_FALSE(mismatch) << "a regression batch does not fit a classifier";
    EXPECT_NE(mismatch.error().find("does not fit the batch's targets"), std::string::npos) << mismatch.error();

    ReplayOptions missing = demoStep("division-by-zero", 180);
    missing.batch = "/nonexistent/step_00000001.pt";
    auto noFile = replayStep(missing);
    ASSERT_FALSE(noFile);
    EXPECT_NE(noFile.error().find("/nonexistent/step_00000001.pt"), std::string::npos);
}

// The texts every view writes a replayed value with, on the kernel's statistics: absent, empty,
// nothing finite, and a range with its non-finite counts.
TEST(Replay, ValueTextsSayWhatTheValueHolds)
{
    auto statsOf = [](std::vector<float> values) {
        return computeContiguousStats("", reinterpret_cast<const uint8_t*>(values.data()), DType::Float32,
                                      {int64_t(values.size())});
    };
    const float nan = std::nanf("");
    const float inf = std::numeric_limits<float>::infinity();

    EXPECT_EQ(finiteRangeText(std::nullopt), "-");
    EXPECT_EQ(nonfiniteCountsText(std::nullopt), "");
    EXPECT_FALSE(hasNonfinite(std::nullopt)) << "an absent value (a constant input) holds no NaN";

    EXPECT_EQ(finiteRangeText(statsOf({})), "empty");
    EXPECT_EQ(nonfiniteCountsText(statsOf({})), "");

    EXPECT_EQ(finiteRangeText(statsOf({nan, nan})), "no finite value");
    EXPECT_EQ(nonfiniteCountsText(statsOf({nan, nan})), "NaN 2, +Inf 0, -Inf 0");

    const auto mixed = statsOf({-2.383f, 2.82f, nan, inf, -inf, 1.f});
    EXPECT_TRUE(hasNonfinite(mixed));
    EXPECT_EQ(finiteRangeText(mixed), "[-2.383, 2.82]");
    EXPECT_EQ(nonfiniteCountsText(mixed), "NaN 1, +Inf 1, -Inf 1");

    const auto finite = statsOf({0.f, 1.462f});
    EXPECT_FALSE(hasNonfinite(finite));
    EXPECT_EQ(finiteRangeText(finite), "[0, 1.462]");
    EXPECT_EQ(nonfiniteCountsText(finite), "");
}

// A forward that is finite and a backward that is not: sqrt(0) is 0, and its gradient 1 / (2 sqrt(0))
// is infinite. The replay takes each op's gradient as backward passes it (a hook, not a copy kept
// by retain_grad): every op that needs one has its gradient's statistics, and the op whose backward
// made the first non-finite gradient out of finite ones is named.
TEST(Replay, EachOpHasItsGradientAndTheOpWhoseBackwardWentNonfiniteIsNamed)
{
    torch::jit::Module model("__torch__.test.SqrtOfZero");
    model.register_attribute("training", c10::BoolType::get(), true);
    model.register_parameter("w", torch::ones({4, 4}).requires_grad_(), false);
    model.define(R"(
def forward(self, x):
    h = torch.relu(torch.linear(x, self.w))
    return torch.sqrt(h).sum()
)");
    test::ScratchDir dir;
    // The second sample's pre-activation is -4: relu makes it exactly 0, and sqrt's gradient there inf.
    auto result = replayOnInputs(model, torch::tensor({{1.0f, 1.0f, 1.0f, 1.0f}, {-1.0f, -1.0f, -1.0f, -1.0f}}), dir);
    ASSERT_TRUE(result) << result.error();
    EXPECT_TRUE(result->lossFinite);
    EXPECT_FALSE(result->firstNonfinite) << "the forward is finite";
    ASSERT_TRUE(result->gradCulprit) << "no op was named for the infinite gradient";
    EXPECT_EQ(result->gradCulprit->op, "aten::sqrt");
    ASSERT_TRUE(result->firstNonfiniteGrad);
    EXPECT_EQ(result->firstNonfiniteGrad->op, "aten::relu") << "sqrt's input, relu's output, has the infinite gradient";
    ASSERT_TRUE(result->firstNonfiniteGrad->grad);
    EXPECT_EQ(result->firstNonfiniteGrad->grad->posinf, 4) << "the second sample's four features";
    for (const ReplayOp& op : result->ops) {
        if (op.op == "aten::linear" || op.op == "aten::relu" || op.op == "aten::sqrt") {
            ASSERT_TRUE(op.grad) << op.op << " has no gradient statistics";
            EXPECT_EQ(op.grad->numel, 8) << op.op;
        }
    }
}

#ifdef __GLIBC__
// `nanscope replay` keeps what a forward and backward free for the next tensor: a 24 MiB block,
// which glibc by default maps and unmaps (and the kernel faults back in, zeroed, page by page on
// the next step), stays in the heap as free memory after it is freed.
TEST(ReplayProcess, MemoryAReplayFreesStaysInTheProcess)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer's allocator stands in for glibc's: mallinfo2 does not see its blocks";
#endif
    keepFreedMemoryForReuse();
    const size_t block = size_t(24) << 20;
    void* (*volatile allocate)(size_t) = std::malloc; // through a volatile pointer: not elided
    char* bytes = static_cast<char*>(allocate(block));
    ASSERT_NE(bytes, nullptr);
    for (size_t i = 0; i < block; i += 4096)
        bytes[i] = char(i);
    std::free(bytes);
    EXPECT_GE(mallinfo2().fordblks, block) << "the freed block went back to the kernel";
}
#endif

// An op that changes its input in place (ReLU(inplace=True), `x += bias`): each op shows the
// values as they were when it ran, and the gradient that reached its own output. Taken after the
// forward, the linear's output read as the ReLU left it, and both ops had the ReLU's gradient.
TEST(Replay, AnInPlaceOpShowsTheValuesBeforeAndAfterIt)
{
    torch::jit::Module model("__torch__.test.InPlaceRelu");
    model.register_attribute("training", c10::BoolType::get(), true);
    model.register_parameter("w", torch::eye(2).requires_grad_(), false);
    model.define(R"(
def forward(self, x):
    h = torch.linear(x, self.w)
    torch.relu_(h)
    return h.sum()
)");
    test::ScratchDir dir;
    auto result = replayOnInputs(model, torch::tensor({{1.0f, -2.0f}, {3.0f, -4.0f}}), dir);
    ASSERT_TRUE(result) << result.error();
    const ReplayOp* linear = nullptr;
    const ReplayOp* relu = nullptr;
    for (const ReplayOp& op : result->ops) {
        if (op.op == "aten::linear")
            linear = &op;
        if (op.op == "aten::relu_")
            relu = &op;
    }
    ASSERT_TRUE(linear && relu);
    ASSERT_TRUE(linear->output && linear->output->min);
    EXPECT_EQ(*linear->output->min, -4.0) << "the linear's output as it made it, not as the ReLU left it";
    ASSERT_FALSE(relu->inputs.empty());
    ASSERT_TRUE(relu->inputs.front() && relu->inputs.front()->min);
    EXPECT_EQ(*relu->inputs.front()->min, -4.0) << "what went into the ReLU";
    ASSERT_TRUE(relu->output && relu->output->min);
    EXPECT_EQ(*relu->output->min, 0.0);
    ASSERT_TRUE(relu->grad && relu->grad->min);
    EXPECT_EQ(*relu->grad->min, 1.0) << "sum's gradient reaches the ReLU's output whole";
    ASSERT_TRUE(linear->grad && linear->grad->min);
    EXPECT_EQ(*linear->grad->min, 0.0) << "the ReLU passes none back where the linear's output was negative";
}

// Reports and Help > About name the LibTorch of the replays without loading it (the window's
// program never does): the version the build recorded must be the one nanscope-torch links.
TEST(Replay, TheLibTorchVersionSaidWithoutLoadingItIsTheOneLinked)
{
    EXPECT_EQ(nanscope::libtorchVersion(), TORCH_VERSION);
}
