// nanscope::Guard in a LibTorch training loop: the run it writes, and its defences (skip,
// rollback, BatchNorm buffers put back), each checked on the model's own tensors.
#include <sstream>
#include <type_traits>
#include "FollowedRun.h"
#include "TestRuns.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"
#include "core/torch/Guard.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace nanscope;

namespace {

// An Adam parameter's state. LibTorch keys an optimizer's state by the parameter's TensorImpl: its
// address printed as a string in older releases, the address itself in newer ones.
template <typename Optimizer> // a template, so that only the branch of the installed LibTorch is compiled
torch::optim::AdamParamState& adamStateOf(Optimizer& optimizer, const torch::Tensor& parameter)
{
    auto& state = optimizer.state();
    using Key = typename std::decay_t<decltype(state)>::key_type;
    void* impl = parameter.unsafeGetTensorImpl();
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream address;
        address << impl;
        return static_cast<torch::optim::AdamParamState&>(*state.at(address.str()));
    } else {
        return static_cast<torch::optim::AdamParamState&>(*state.at(impl));
    }
}

namespace rf = runformat;
namespace fs = std::filesystem;

// A small classifier with a BatchNorm layer, trained on random batches.
struct Loop
{
    explicit Loop(bool adam = false, double lr = 0.05)
    {
        torch::manual_seed(0);
        model = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::BatchNorm1d(8), torch::nn::ReLU(),
                                      torch::nn::Linear(8, 3));
        if (adam)
            optimizer = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(lr));
        else
            optimizer = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(lr));
    }

    // One step: a NaN in the batch when `poison`, the loss scaled by `lossScale` (a spike in the
    // loss and every gradient). Returns what endStep returned.
    bool step(Guard& guard, int64_t step, bool poison = false, double lossScale = 1.0)
    {
        auto x = torch::randn({16, 4});
        auto y = torch::randint(3, {16}, torch::kLong);
        if (poison)
            x[0][0] = std::nan("");
        guard.beginStep(step, x, y);
        auto loss = torch::nn::functional::cross_entropy(guard.forward(*model, x), y) * lossScale;
        optimizer->zero_grad();
        loss.backward();
        lastGradNorm = model[0]->as<torch::nn::Linear>()->weight.grad().norm().item<double>();
        const bool apply = guard.endStep(loss, *optimizer);
        if (apply)
            optimizer->step();
        return apply;
    }

    std::vector<torch::Tensor> weights() const
    {
        std::vector<torch::Tensor> out;
        for (const auto& p : model->parameters())
            out.push_back(p.detach().clone());
        return out;
    }

    torch::Tensor runningMean() { return model[1]->as<torch::nn::BatchNorm1d>()->running_mean.clone(); }

    torch::nn::Sequential model{nullptr};
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    double lastGradNorm = 0;
};

bool sameTensors(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!torch::equal(a[i], b[i]))
            return false;
    return true;
}

struct Event
{
    int64_t step;
    std::string kind, message;
};

std::vector<Event> eventsOf(const std::string& directory)
{
    auto reader = RunReader::open(directory);
    EXPECT_TRUE(reader) << reader.error();
    std::vector<Event> events;
    if (!reader)
        return events;
    auto kinds = (*reader)->readStrings(rf::kEvents, "kind");
    auto messages = (*reader)->readStrings(rf::kEvents, "message");
    const auto& steps = (*reader)->steps(rf::kEvents);
    for (size_t i = 0; i < steps.size(); ++i)
        events.push_back({steps[i], (*kinds)[i], (*messages)[i]});
    return events;
}

std::vector<int64_t> stepsOfKind(const std::vector<Event>& events, const std::string& kind)
{
    std::vector<int64_t> steps;
    for (const auto& e : events)
        if (e.kind == kind)
            steps.push_back(e.step);
    return steps;
}

} // namespace

TEST(Guard, WritesARunTheReaderReadsWithEveryTable)
{
    test::ScratchDir dir;
    Loop loop;
    GuardOptions options;
    options.checkpointEvery = 5;
    options.activationsEvery = 4;
    double loggedGradNorm = 0;
    {
        Guard guard(dir.path(), *loop.model, options);
        for (int64_t step = 0; step < 12; ++step)
            ASSERT_TRUE(loop.step(guard, step));
        loggedGradNorm = loop.lastGradNorm;
    }
    auto opened = RunReader::open(dir.path());
    ASSERT_TRUE(opened) << opened.error();
    const RunReader& reader = **opened;
    EXPECT_EQ(reader.table(rf::kScalars)->rows, 12);
    for (const char* scalar : {"loss", "grad_norm", "lr", "skipped", "param_norm"})
        EXPECT_TRUE(reader.readSeries(rf::kScalars, scalar)) << scalar;
    EXPECT_DOUBLE_EQ(reader.readSeries(rf::kScalars, "lr")->front(), 0.05);

    const TableInfo* layers = reader.table(rf::kLayers);
    ASSERT_NE(layers, nullptr);
    EXPECT_EQ(layers->names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"}));
    auto firstLayerGrad = reader.readColumn(rf::kLayers, "grad_norm", 0);
    EXPECT_NEAR(firstLayerGrad->back(), loggedGradNorm, 1e-5 * loggedGradNorm) << "the logged norm is the gradient's norm";

    const TableInfo* activations = reader.table(rf::kActivations);
    ASSERT_NE(activations, nullptr);
    EXPECT_EQ(activations->names, (std::vector<std::string>{"0", "1", "2", "3"}));
    EXPECT_EQ(activations->kinds, (std::vector<std::string>{"Linear", "BatchNorm1d", "ReLU", "Linear"}));
    EXPECT_EQ(reader.steps(rf::kActivations), (std::vector<int64_t>{0, 4, 8})) << "the first step and every 4";
    auto reluMin = reader.readColumn(rf::kActivations, "min", 2);
    EXPECT_GE(reluMin->front(), 0.f) << "a ReLU's output is never negative";

    EXPECT_EQ(reader.table(rf::kBuffers)->names, std::vector<std::string>{"1"});
    EXPECT_EQ(reader.table(rf::kInputs)->names, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(reader.info().checkpoints.size(), 3u) << "steps 0, 5 and 10";
    EXPECT_TRUE(reader.info().checkpoints.count(10));
    EXPECT_EQ(stepsOfKind(eventsOf(dir.path()), rf::event::kCheckpoint), (std::vector<int64_t>{0, 5, 10}));
}

TEST(Guard, SkipsANonfiniteStepAndLeavesTheWeightsAlone)
{
    test::ScratchDir dir;
    Loop loop;
    std::vector<torch::Tensor> before, after;
    {
        Guard guard(dir.path(), *loop.model);
        for (int64_t step = 0; step < 6; ++step)
            ASSERT_TRUE(loop.step(guard, step));
        before = loop.weights();
        EXPECT_FALSE(loop.step(guard, 6, /*poison=*/true)) << "endStep says: do not apply step 6";
        EXPECT_FALSE(guard.lastStep().finite);
        after = loop.weights();
        for (const auto& p : loop.model->parameters())
            EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0) << "the skipped step's gradients are zeroed";
        EXPECT_TRUE(loop.step(guard, 7)) << "training goes on";
    }
    EXPECT_TRUE(sameTensors(before, after));
    const auto events = eventsOf(dir.path());
    EXPECT_EQ(stepsOfKind(events, rf::event::kSkippedStep), std::vector<int64_t>{6});
    EXPECT_EQ(stepsOfKind(events, rf::event::kNonfiniteLoss), std::vector<int64_t>{6});
    auto reader = RunReader::open(dir.path());
    auto skipped = (*reader)->readSeries(rf::kScalars, "skipped");
    EXPECT_EQ((*skipped)[6], 1.0);
    EXPECT_EQ((*skipped)[7], 0.0);
    EXPECT_TRUE((*reader)->info().checkpoints.count(6)) << "the incident's checkpoint";
    EXPECT_TRUE((*reader)->info().batches.count(6)) << "and its batch, for replay";
}

// run.h5's rows are written on a thread of their own (RunWriterThread): a reader following the
// run sees every row after flush(), and an incident's rows without one, since a loop that stops
// at the first NaN may exit right after endStep returns.
TEST(Guard, LoggedRowsAreInRunH5WhileTheGuardRunsAfterFlushAndAtAnIncident)
{
    test::ScratchDir dir;
    Loop loop;
    Guard guard(dir.path(), *loop.model);
    for (int64_t step = 0; step < 5; ++step)
        ASSERT_TRUE(loop.step(guard, step));
    guard.flush();
    test::FollowedRun live = test::followRun(dir.path());
    ASSERT_TRUE(live.opened) << live.output;
    EXPECT_TRUE(live.swmr) << "the Guard still has run.h5 open";
    EXPECT_EQ(live.rows[rf::kScalars], 5) << live.output;
    EXPECT_EQ(live.rows[rf::kLayers], 5) << live.output;

    EXPECT_FALSE(loop.step(guard, 5, /*poison=*/true));
    live = test::followRun(dir.path());
    ASSERT_TRUE(live.opened) << live.output;
    EXPECT_EQ(live.rows[rf::kScalars], 6) << "the non-finite step's row is in run.h5 when endStep returns";
    EXPECT_EQ(live.lastScalar["skipped"], 1.0) << live.output;
    EXPECT_NE(std::find(live.eventKinds.begin(), live.eventKinds.end(), rf::event::kIncidentCapture),
              live.eventKinds.end())
        << "and so is its capture event:\n"
        << live.output;
}

// Triage tells a bad batch from bad weights by replaying a healthy step's batch on the incident's
// checkpoint; a capture that left only incident batches gives it nothing to compare with. The
// Guard saves the last healthy step's batch beside each capture, the values that step really saw.
TEST(Guard, EachCaptureLeavesTriageTheBatchOfTheLastHealthyStep)
{
    test::ScratchDir dir;
    Loop loop;
    torch::Tensor seenAtStep8;
    {
        Guard guard(dir.path(), *loop.model, [] {
            GuardOptions o;
            o.checkpointEvery = 0;
            return o;
        }());
        for (int64_t step = 0; step < 9; ++step) {
            torch::manual_seed(100 + step);
            auto x = torch::randn({16, 4});
            auto y = torch::randint(3, {16}, torch::kLong);
            if (step == 8)
                seenAtStep8 = x.clone();
            guard.beginStep(step, x, y);
            auto loss = torch::nn::functional::cross_entropy(guard.forward(*loop.model, x), y);
            loop.optimizer->zero_grad();
            loss.backward();
            ASSERT_TRUE(guard.endStep(loss, *loop.optimizer));
            loop.optimizer->step();
        }
        EXPECT_FALSE(loop.step(guard, 9, /*poison=*/true));
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_TRUE((*reader)->info().batches.count(9)) << "the incident's batch";
    ASSERT_TRUE((*reader)->info().batches.count(8)) << "and the last healthy one";
    std::ifstream in((fs::path(dir.path()) / rf::kBatchDir / "step_00000008.pt").string(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto batch = torch::pickle_load(bytes).toGenericDict();
    EXPECT_TRUE(torch::equal(batch.at("inputs").toTensor(), seenAtStep8)) << "the values step 8 saw";
    const auto events = eventsOf(dir.path());
    const auto capture = std::find_if(events.begin(), events.end(),
                                      [](const Event& e) { return e.kind == rf::event::kIncidentCapture; });
    ASSERT_NE(capture, events.end());
    EXPECT_NE(capture->message.find("batch 8, the last healthy step's"), std::string::npos) << capture->message;
}

// A loop that writes each batch into the same tensor: the held batch no longer holds the healthy
// step's values, so none is saved under that step's name.
TEST(Guard, AHealthyBatchOverwrittenInPlaceIsNotSavedUnderItsStep)
{
    test::ScratchDir dir;
    Loop loop;
    auto x = torch::zeros({16, 4});
    auto y = torch::zeros({16}, torch::kLong);
    {
        GuardOptions options;
        options.checkpointEvery = 0;
        Guard guard(dir.path(), *loop.model, options);
        for (int64_t step = 0; step < 6; ++step) {
            x.copy_(torch::randn({16, 4}));
            y.copy_(torch::randint(3, {16}, torch::kLong));
            if (step == 5)
                x[0][0] = std::nan("");
            guard.beginStep(step, x, y);
            auto loss = torch::nn::functional::cross_entropy(guard.forward(*loop.model, x), y);
            loop.optimizer->zero_grad();
            loss.backward();
            if (guard.endStep(loss, *loop.optimizer))
                loop.optimizer->step();
        }
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_TRUE((*reader)->info().batches.count(5));
    EXPECT_FALSE((*reader)->info().batches.count(4)) << "step 4's values were overwritten by step 5's";
}

// The Guard judges spikes by the recorders' one rule (OnlineSpikeDetector, as the Python
// recorder): a finite step far above the recent median is an incident whose checkpoint and batch
// are kept, and it is applied (a spike is evidence, not a reason to skip).
TEST(Guard, ASpikeByTheRecordersRuleIsCapturedAndApplied)
{
    test::ScratchDir dir;
    Loop loop(/*adam=*/true, 0.01); // Adam's step is bounded by its lr: the spike does not wreck the weights
    {
        Guard guard(dir.path(), *loop.model);
        for (int64_t step = 0; step < 30; ++step) {
            ASSERT_TRUE(loop.step(guard, step));
            EXPECT_FALSE(guard.lastStep().spike) << "step " << step << " is ordinary training";
        }
        EXPECT_TRUE(loop.step(guard, 30, false, /*lossScale=*/1e4));
        EXPECT_TRUE(guard.lastStep().spike);
        EXPECT_TRUE(guard.lastStep().finite);
        EXPECT_TRUE(loop.step(guard, 31));
        EXPECT_FALSE(guard.lastStep().spike);
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_TRUE((*reader)->info().checkpoints.count(30)) << "the spike's checkpoint";
    EXPECT_TRUE((*reader)->info().batches.count(30)) << "and its batch, for replay";
    EXPECT_FALSE((*reader)->info().checkpoints.count(31));
}

TEST(Guard, RollsBackToTheLastGoodSnapshotAfterConsecutiveBadSteps)
{
    test::ScratchDir dir;
    Loop loop(/*adam=*/true, 0.01);
    GuardOptions options;
    options.rollbackAfter = 3;
    options.snapshotEvery = 2;
    options.rollbackLrFactor = 0.5;
    std::vector<torch::Tensor> snapshotWeights;
    torch::Tensor snapshotExpAvg;
    {
        Guard guard(dir.path(), *loop.model, options);
        for (int64_t step = 0; step < 6; ++step) {
            if (step == 4) {
                // Snapshots are taken at steps 0, 2 and 4, before their updates.
                snapshotWeights = loop.weights();
                auto& state = adamStateOf(*loop.optimizer, loop.model->parameters()[0]);
                snapshotExpAvg = state.exp_avg().clone();
            }
            ASSERT_TRUE(loop.step(guard, step));
        }
        EXPECT_FALSE(loop.step(guard, 6, true));
        EXPECT_FALSE(loop.step(guard, 7, true));
        EXPECT_FALSE(sameTensors(loop.weights(), snapshotWeights)) << "steps 4 and 5 were applied";
        EXPECT_FALSE(loop.step(guard, 8, true));
        EXPECT_TRUE(guard.lastStep().rolledBack);
        EXPECT_DOUBLE_EQ(guard.learningRateScale(), 0.5);
    }
    EXPECT_TRUE(sameTensors(loop.weights(), snapshotWeights)) << "the weights of the last good snapshot";
    auto& state = adamStateOf(*loop.optimizer, loop.model->parameters()[0]);
    EXPECT_EQ(state.step(), 4) << "Adam's state as it was before step 4's update";
    EXPECT_TRUE(torch::equal(state.exp_avg(), snapshotExpAvg));
    EXPECT_DOUBLE_EQ(loop.optimizer->param_groups()[0].options().get_lr(), 0.005);
    const auto events = eventsOf(dir.path());
    EXPECT_EQ(stepsOfKind(events, rf::event::kRollback), std::vector<int64_t>{8});
    auto reader = RunReader::open(dir.path());
    EXPECT_DOUBLE_EQ((*reader)->readSeries(rf::kScalars, "lr")->back(), 0.005) << "the scaled rate is logged";
}

TEST(Guard, ARollbackNeverRestoresWeightsAnUpdateMadeNonfinite)
{
    // An update born NaN (issue 52): Adam with eps=0 divides 0 by 0 for a weight whose gradient is
    // exactly zero, so step 0's finite loss and gradients leave NaN weights behind, and steps 1 and
    // 2 are non-finite. The state a rollback returns to is the one step 0's forward ran on (taken
    // before its update, kept because the step came out finite), never the update's. The Python
    // recorder is held to the same (test_recorder_defences.py).
    test::ScratchDir dir;
    torch::manual_seed(0);
    torch::nn::Sequential model(torch::nn::Linear(4, 2));
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(0.01).eps(0.0));
    GuardOptions options;
    options.rollbackAfter = 2;
    options.snapshotEvery = 1;
    options.checkpointEvery = 0;
    std::vector<bool> finiteAfter;
    {
        Guard guard(dir.path(), *model, options);
        for (int64_t step = 0; step < 6; ++step) {
            auto x = torch::randn({8, 4});
            auto y = torch::randn({8, 2});
            const double gate = step == 0 ? 0.0 : 1.0; // step 0: every gradient exactly zero
            guard.beginStep(step, x, y);
            auto loss = torch::mse_loss(guard.forward(*model, x) * gate, y * gate);
            adam.zero_grad();
            loss.backward();
            if (guard.endStep(loss, adam))
                adam.step();
            bool finite = true;
            for (const auto& p : model->parameters())
                finite = finite && torch::isfinite(p).all().item<bool>();
            finiteAfter.push_back(finite);
        }
    }
    ASSERT_FALSE(finiteAfter[0]) << "Adam with eps=0 wrote NaN from finite gradients";
    const auto events = eventsOf(dir.path());
    EXPECT_EQ(stepsOfKind(events, rf::event::kRollback), std::vector<int64_t>{2});
    for (size_t step = 2; step < finiteAfter.size(); ++step)
        EXPECT_TRUE(finiteAfter[step]) << "after step " << step;
    for (const auto& event : events)
        if (event.kind == rf::event::kRollback)
            EXPECT_NE(event.message.find("optimizer state of step 0 restored after 2 non-finite steps"),
                      std::string::npos) << event.message;
}

TEST(Guard, RollbackRefusesAnOptimizerItDoesNotKnowUnlessAllowed)
{
    struct Plain : torch::optim::Optimizer
    {
        explicit Plain(std::vector<torch::Tensor> params)
            : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                        std::make_unique<torch::optim::SGDOptions>(0.1))
        {
        }
        torch::Tensor step(LossClosure) override { return {}; }
    };
    test::ScratchDir dir;
    Loop loop;
    Plain plain(loop.model->parameters());
    GuardOptions options;
    options.rollbackAfter = 2;
    Guard guard(dir.path(), *loop.model, options);
    auto x = torch::randn({16, 4});
    auto y = torch::randint(3, {16}, torch::kLong);
    guard.beginStep(0, x, y);
    auto loss = torch::nn::functional::cross_entropy(guard.forward(*loop.model, x), y);
    loss.backward();
    try {
        guard.endStep(loss, plain);
        FAIL() << "an unknown optimizer with rollback on must be an error";
    } catch (const GuardError& e) {
        EXPECT_NE(std::string(e.what()).find("allowUnknownOptimizer"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("Adam"), std::string::npos) << "it names the optimizers it knows";
    }

    test::ScratchDir allowedDir;
    options.allowUnknownOptimizer = true;
    Guard allowed(allowedDir.path(), *loop.model, options);
    allowed.beginStep(0, x, y);
    EXPECT_TRUE(allowed.endStep(loss, plain)) << "training continues, without rollback";
    allowed.close();
    const auto events = eventsOf(allowedDir.path());
    ASSERT_FALSE(stepsOfKind(events, rf::event::kNote).empty());
}

TEST(Guard, PutsBatchNormBuffersBackOnASkippedStep)
{
    for (const bool restore : {true, false}) {
        test::ScratchDir dir;
        Loop loop;
        GuardOptions options;
        options.restoreBuffersOnSkip = restore;
        torch::Tensor before;
        {
            Guard guard(dir.path(), *loop.model, options);
            for (int64_t step = 0; step < 3; ++step)
                loop.step(guard, step);
            before = loop.runningMean();
            EXPECT_FALSE(loop.step(guard, 3, /*poison=*/true));
        }
        const auto restoredSteps = stepsOfKind(eventsOf(dir.path()), rf::event::kBuffersRestored);
        if (restore) {
            EXPECT_TRUE(torch::equal(loop.runningMean(), before)) << "running_mean as before step 3's forward";
            EXPECT_EQ(restoredSteps, std::vector<int64_t>{3});
        } else {
            EXPECT_TRUE(torch::isnan(loop.runningMean()).any().item<bool>()) << "off by default: the NaN stays";
            EXPECT_TRUE(restoredSteps.empty());
        }
    }
}

TEST(Guard, ALossThatIsNotOneValueIsAClearError)
{
    test::ScratchDir dir;
    Loop loop;
    Guard guard(dir.path(), *loop.model);
    auto x = torch::randn({16, 4});
    guard.beginStep(0, x);
    auto perSample = guard.forward(*loop.model, x).sum(1);
    perSample.sum().backward();
    try {
        guard.endStep(perSample, *loop.optimizer);
        FAIL() << "a loss of 16 values must be refused";
    } catch (const GuardError& e) {
        EXPECT_NE(std::string(e.what()).find("single value"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[16]"), std::string::npos) << "it names the shape: " << e.what();
    }
}

TEST(Guard, AModelOnSeveralDevicesIsRefusedAndLeftAsItWas)
{
    // One parameter on another device (the meta device: no GPU needed to split a model).
    struct Split : torch::nn::Module
    {
        Split()
        {
            first = register_parameter("first", torch::ones({2}));
            second = register_parameter("second", torch::ones({2}, torch::TensorOptions().device(torch::kMeta)));
        }
        torch::Tensor first, second;
    };
    test::ScratchDir dir;
    Split model;
    try {
        Guard guard(dir.path(), model);
        FAIL() << "a model on two devices must be refused";
    } catch (const GuardError& e) {
        EXPECT_NE(std::string(e.what()).find("2 devices"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("second on meta"), std::string::npos) << "names the parameter: " << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir.path()) / "run.h5")) << "nothing written";
    EXPECT_TRUE(model.second.is_meta() && torch::equal(model.first, torch::ones({2}))) << "the model is left as it was";
}

TEST(Guard, StepsMustIncreaseAndARunIsWrittenOnce)
{
    test::ScratchDir dir;
    Loop loop;
    {
        Guard guard(dir.path(), *loop.model);
        loop.step(guard, 5);
        EXPECT_THROW(loop.step(guard, 5), GuardError);
    }
    EXPECT_THROW(Guard(dir.path(), *loop.model), GuardError) << "run.h5 exists";
}

// A C++ module's checkpoint is a LibTorch archive: nanscope's own reader (no torch.load) finds
// every parameter and buffer in it under its module path, so statistics and diff work on it.
TEST(Guard, ACppModuleCheckpointIsReadByTheCheckpointReader)
{
    test::ScratchDir dir;
    Loop loop;
    {
        Guard guard(dir.path(), *loop.model);
        loop.step(guard, 0);
    }
    auto checkpoint = readCheckpoint(dir / "checkpoints/step_00000000.pt");
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    std::vector<std::string> names;
    for (const auto& t : checkpoint->tensors)
        names.push_back(t.name);
    for (const char* expected : {"0.weight", "1.running_var", "3.bias"})
        EXPECT_NE(std::find_if(names.begin(), names.end(),
                               [&](const std::string& n) { return n.size() >= std::strlen(expected) &&
                                                                  n.compare(n.size() - std::strlen(expected), std::string::npos, expected) == 0; }),
                  names.end())
            << expected << " not among " << ::testing::PrintToString(names);
    const auto events = eventsOf(dir.path());
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.front().message.find("no replay"), std::string::npos) << "the run says what its checkpoints cannot do";
    // Its form file keeps it out of the replayable steps, and says what would make it replayable.
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader) << reader.error();
    EXPECT_TRUE((*reader)->info().replayableSteps().empty());
    EXPECT_NE((*reader)->info().whyNotReplayable(0).find("torch::jit::Module"), std::string::npos)
        << (*reader)->info().whyNotReplayable(0);
}

namespace {

// The bytes of every parameter and buffer of `model`: equal bits, NaN payloads included.
std::vector<torch::Tensor> stateBits(const torch::nn::Module& model)
{
    std::vector<torch::Tensor> out;
    for (const auto& p : model.named_parameters(true))
        out.push_back(p.value().detach().contiguous().reshape({-1}).view(torch::kByte).clone());
    for (const auto& b : model.named_buffers(true))
        out.push_back(b.value().detach().contiguous().reshape({-1}).view(torch::kByte).clone());
    return out;
}

// The same 40 steps with and without a Guard, on the same batches, with dropout drawing from the
// global generator: spikes at steps 22, 25 and 31 (the loss scaled up in both loops alike) and a
// NaN in step 28's batch. Under the Guard every step is checkpointed every 3 steps, its activations
// measured, and every incident captured (checkpoint, batch, pre-forward BatchNorm buffers).
std::vector<std::vector<torch::Tensor>> trainAlike(bool adam, const std::string* runDirectory)
{
    torch::manual_seed(7);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
    for (int i = 0; i < 40; ++i)
        batches.emplace_back(torch::randn({16, 4}), torch::randint(3, {16}, torch::kLong));
    batches[28].first[3][1] = std::nan("");
    torch::manual_seed(0);
    auto model = torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::BatchNorm1d(8), torch::nn::ReLU(),
                                       torch::nn::Dropout(0.2), torch::nn::Linear(8, 3));
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    if (adam)
        optimizer = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(0.01));
    else
        optimizer = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    std::unique_ptr<Guard> guard;
    if (runDirectory) {
        GuardOptions options;
        options.checkpointEvery = 3;
        options.activationsEvery = 1;
        options.spikeCaptures = -1;
        options.laterNonfiniteCaptures = -1;
        options.saveBatchWithCheckpoint = true;
        guard = std::make_unique<Guard>(*runDirectory, *model, options);
    }
    torch::manual_seed(1); // the dropout masks
    std::vector<std::vector<torch::Tensor>> after;
    for (int64_t step = 0; step < 40; ++step) {
        const auto& [x, y] = batches[size_t(step)];
        const double scale = (step == 22 || step == 25 || step == 31) ? 1000.0 : 1.0;
        if (guard)
            guard->beginStep(step, x, y);
        auto out = guard ? guard->forward(*model, x) : model->forward(x);
        auto loss = torch::nn::functional::cross_entropy(out, y) * scale;
        optimizer->zero_grad();
        loss.backward();
        bool apply = true;
        if (guard) {
            apply = guard->endStep(loss, *optimizer);
        } else {
            apply = std::isfinite(loss.item<double>());
            for (const auto& p : model->parameters())
                apply = apply && torch::isfinite(p.grad()).all().item<bool>();
        }
        if (apply)
            optimizer->step();
        after.push_back(stateBits(*model));
    }
    return after;
}

} // namespace

// Issue 24: recording never changes training. Every parameter and buffer is the same bits after
// every step with the Guard (its checkpoints, captures and buffer snapshots) as without it.
TEST(Guard, NeverChangesTheNumbersOfTheTrainingItGuards)
{
    for (const bool adam : {false, true}) {
        test::ScratchDir dir;
        const std::string run = dir.path();
        const auto plain = trainAlike(adam, nullptr);
        const auto guarded = trainAlike(adam, &run);
        ASSERT_EQ(plain.size(), guarded.size());
        for (size_t step = 0; step < plain.size(); ++step) {
            ASSERT_EQ(plain[step].size(), guarded[step].size());
            for (size_t i = 0; i < plain[step].size(); ++i)
                ASSERT_TRUE(torch::equal(plain[step][i], guarded[step][i]))
                    << (adam ? "Adam" : "SGD") << ", step " << step << ": tensor " << i << " differs under the Guard";
        }
        const auto events = eventsOf(run);
        const std::vector<int64_t> checkpoints = stepsOfKind(events, rf::event::kCheckpoint);
        EXPECT_GE(checkpoints.size(), 14u);
        EXPECT_TRUE(std::count(checkpoints.begin(), checkpoints.end(), 28)) << "the non-finite step was captured";
    }
}

// The Guard logs the optimizer's own count of its updates (optimizer_step) as the Python recorder
// does, read before each step's update: 0, 1, 2, ... for Adam; an optimizer that keeps no count
// (SGD) has no such column. A name the Guard computes is refused as a user's scalar.
TEST(Guard, LogsTheOptimizersCountOfItsUpdatesWhenItKeepsOne)
{
    for (const bool adam : {true, false}) {
        test::ScratchDir dir;
        Loop loop(adam, 0.01);
        {
            Guard guard(dir.path(), *loop.model, GuardOptions{});
            for (int64_t step = 0; step < 4; ++step)
                ASSERT_TRUE(loop.step(guard, step));
        }
        auto opened = RunReader::open(dir.path());
        ASSERT_TRUE(opened) << opened.error();
        auto counts = (*opened)->readSeries(rf::kScalars, rf::scalar::kOptimizerStep);
        if (adam) {
            ASSERT_TRUE(counts) << counts.error();
            EXPECT_EQ(*counts, (std::vector<double>{0, 1, 2, 3}));
        } else {
            EXPECT_FALSE(counts) << "SGD keeps no count";
        }
    }
}
