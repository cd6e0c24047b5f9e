// Issue 50: the earliest precursor (a drift inside the model, of less than a decade, into a numeric
// limit), a NaN born in an optimizer update at any step, and the mixture-of-experts / adapter names
// the vanishing rule reads.
#include "core/scan/ExpertLoad.h"
#include "core/scan/Precursor.h"
#include "core/scan/ScanRules.h"

#include "NoisyScanRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace nanscope;
using namespace nanscope::scan;

namespace {

// A run of `count` steps: a loss falling as `lossAt` says and a gradient norm with log-normal noise
// around 1, each with noise from `seed`.
struct SeriesRun : test::NoisyScanRun
{
    SeriesRun(int64_t count, const std::function<double(int64_t)>& lossAt, uint32_t seed = 5)
        : NoisyScanRun(count, lossAt, 0.03, 0.08, seed)
    {
    }
};

const Incident* blowupOf(const ScanContext& context)
{
    for (const auto& incident : context.report.incidents)
        if (incident.kind == IncidentKind::Blowup)
            return &incident;
    return nullptr;
}

} // namespace

// A learned temperature: the logits' largest value climbs steadily from 1 to 10.8 between steps 300
// and 1399 (x11, about one decade, while the loss is flat), and at 1400 exp() of it overflows float16.
TEST(Precursor, ADriftOfADecadeIntoTheFloat16ExpLimitIsAGradualBlowupFromWhereItBegan)
{
    SeriesRun run(1450, [](int64_t) { return 0.3; });
    for (size_t r = 1400; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    std::mt19937 rng(9);
    std::normal_distribution<double> noise(0.0, 1.0);
    inputs.addTable("activations", {"encoder", "logits"}, run.steps,
                    {{"max", run.table(2, [&](int64_t step, size_t c) {
                          const double wobble = std::pow(10.0, 0.004 * noise(rng));
                          if (step >= 1400)
                              return c == 0 ? 2.f : NAN;
                          if (c == 0)
                              return float(2.0 * wobble);
                          return float((step < 300 ? 1.0 : 1.0 + 9.8 * double(step - 300) / 1099.0) * wobble);
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 290);
    EXPECT_LE(blowup->onsetStep, 420);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "logits");
    EXPECT_NE(blowup->cause.find("began in the output of logits"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("exp() overflows float16 above 11.09"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("until NaN at step 1400"), std::string::npos) << blowup->cause;
}

// The same run, but the logits rose while the model learned (steps 0 to 150) and then stayed at 9:
// a level reached long ago, not a climb the failure continued. One batch with a NaN-free jump
// blows it up at step 1000: sudden, from a stable baseline.
TEST(Precursor, ALevelThatLearningReachedLongAgoIsNotAPrecursor)
{
    SeriesRun run(1100, [](int64_t) { return 0.3; });
    for (size_t r = 1000; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    std::mt19937 rng(4);
    std::normal_distribution<double> noise(0.0, 1.0);
    inputs.addTable("activations", {"logits"}, run.steps,
                    {{"max", run.table(1, [&](int64_t step, size_t) {
                          if (step >= 1000)
                              return NAN;
                          const double wobble = std::pow(10.0, 0.01 * noise(rng));
                          return float((step < 150 ? 2.0 + 7.0 * double(step) / 150.0 : 9.0) * wobble);
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden) << blowup->cause;
    EXPECT_EQ(blowup->onsetStep, 1000);
}

// A block unfrozen into Adam (eps=0) at step 39 while the loss still falls fast: its weight's
// gradient is exactly zero there, the update writes NaN, and step 40 is NaN. Born in the update of
// step 39, whatever the loss was doing before.
TEST(NonfiniteOrigin, ANanWrittenByTheUpdateOfAnyStepIsBornInThatUpdate)
{
    SeriesRun run(120, [](int64_t step) { return 10.0 * std::exp(-double(step) / 15.0) + 0.1; });
    for (size_t r = 40; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    inputs.addTable("layers", {"stem.weight", "block.fc1.weight", "head.weight"}, run.steps,
                    {{"grad_norm", run.table(3, [](int64_t step, size_t c) {
                          if (step >= 40)
                              return NAN;
                          return c == 1 ? 0.f : 1.f;
                      })},
                     {"param_norm", run.table(3, [](int64_t step, size_t c) {
                          if (step >= 41 || (step == 40 && c == 1))
                              return NAN;
                          return 3.f;
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->evidence.nonfiniteOrigin, NonfiniteOrigin::Parameters);
    EXPECT_EQ(blowup->onsetStep, 39);
    EXPECT_EQ(blowup->nonfiniteStep, 40);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "block.fc1.weight");
    EXPECT_NE(blowup->cause.find("NaN born in the optimizer update of step 39"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->cause.find("exactly zero"), std::string::npos) << blowup->cause;
}

TEST(NumericLimit, ExpLimitsAreNamedOnlyJustBelowOrJustPastThem)
{
    ASSERT_TRUE(numericLimitNear(10.2));
    EXPECT_NE(numericLimitNear(10.2)->what.find("float16"), std::string::npos);
    EXPECT_FALSE(numericLimitNear(7.5)) << "x1.48 below 11.09: a level training reaches";
    EXPECT_FALSE(numericLimitNear(13.7)) << "past the limit and finite: nothing took exp() of it in float16";
    // A little past it: an adapter's output at 11.5 fed exp() through its sum with the base's logits.
    ASSERT_TRUE(numericLimitNear(11.5));
    EXPECT_NE(numericLimitNear(11.5)->what.find("float16"), std::string::npos);
    ASSERT_TRUE(numericLimitNear(80.0));
    EXPECT_NE(numericLimitNear(80.0)->what.find("float32"), std::string::npos);
    ASSERT_TRUE(numericLimitNear(30000.0));
    EXPECT_NE(numericLimitNear(30000.0)->what.find("65504"), std::string::npos);
}

TEST(ExpertLoad, ExpertsAreFoundInTheNamesMixtureOfExpertsModelsUse)
{
    // Mixtral (transformers): model.layers.N.block_sparse_moe.experts.E.w1.weight
    const auto mixtral = expertOf("model.layers.3.block_sparse_moe.experts.7.w1.weight");
    ASSERT_TRUE(mixtral);
    EXPECT_EQ(mixtral->group, "model.layers.3.block_sparse_moe.experts");
    EXPECT_EQ(mixtral->index, "7");
    const auto flat = expertOf("moe.expert_2.fc1.weight");
    ASSERT_TRUE(flat);
    EXPECT_EQ(flat->group, "moe.expert_");
    EXPECT_EQ(flat->index, "2");
    EXPECT_FALSE(expertOf("model.layers.3.mlp.down_proj.weight"));
    EXPECT_FALSE(expertOf("router.weight"));
    EXPECT_TRUE(adapterParameter("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"));
    EXPECT_FALSE(adapterParameter("model.layers.0.self_attn.q_proj.weight"));
}

TEST(ExpertLoad, ARouterIsAGateBesideNumberedExpertsNotAGatedProjection)
{
    const std::vector<std::string> mixtral = {"model.layers.0.block_sparse_moe.gate.weight",
                                              "model.layers.0.block_sparse_moe.experts.0.w1.weight",
                                              "model.layers.0.block_sparse_moe.experts.1.w1.weight",
                                              "model.layers.0.mlp_dense.gate_proj.weight"};
    EXPECT_EQ(routedExperts("model.layers.0.block_sparse_moe.gate", mixtral),
              std::optional<std::string>("model.layers.0.block_sparse_moe.experts"));
    // A gated MLP's projection, an expert's own projection, another layer's gate: no router.
    EXPECT_FALSE(routedExperts("model.layers.0.mlp_dense.gate_proj", mixtral));
    EXPECT_FALSE(routedExperts("model.layers.0.block_sparse_moe.experts.1.w1", mixtral));
    EXPECT_FALSE(routedExperts("model.layers.1.block_sparse_moe.gate", mixtral));
    // Switch Transformers (transformers): mlp.router.classifier beside mlp.experts.expert_0.
    const std::vector<std::string> switchMoe = {"encoder.block.1.layer.1.mlp.router.classifier.weight",
                                                "encoder.block.1.layer.1.mlp.experts.expert_0.wi.weight"};
    EXPECT_EQ(routedExperts("encoder.block.1.layer.1.mlp.router.classifier", switchMoe),
              std::optional<std::string>("encoder.block.1.layer.1.mlp.experts.expert_*"));
    // Qwen2-MoE's shared expert gate is a sigmoid on one expert, not the softmax router.
    const std::vector<std::string> qwen = {"model.layers.0.mlp.gate.weight", "model.layers.0.mlp.experts.0.up_proj.weight",
                                           "model.layers.0.mlp.shared_expert_gate.weight"};
    EXPECT_TRUE(routedExperts("model.layers.0.mlp.gate", qwen));
    EXPECT_FALSE(routedExperts("model.layers.0.mlp.shared_expert_gate", qwen));
    // transformers 5 stacks the experts into one tensor per projection.
    const std::vector<std::string> stacked = {"model.layers.0.mlp.gate.weight", "model.layers.0.mlp.experts.gate_up_proj",
                                              "model.layers.0.mlp.experts.down_proj"};
    EXPECT_EQ(routedExperts("model.layers.0.mlp.gate", stacked), std::optional<std::string>("model.layers.0.mlp.experts"));
    EXPECT_FALSE(routedExperts("model.layers.0.mlp.experts", stacked));
    // No experts in the model: a module called gate routes nothing.
    EXPECT_FALSE(routedExperts("gate", {"gate.weight", "head.weight"}));
}

TEST(ExpertLoad, AnExpertIsStarvedOnlyWhileASiblingTrains)
{
    const std::vector<std::string> all = {"router.weight", "experts.0.w.weight", "experts.1.w.weight",
                                          "experts.2.w.weight", "head.weight"};
    // Expert 2 silent from 300 on while 0 and 1 train: starved. The head silent too: not an expert.
    const auto starved = starvedExperts({{"experts.2.w.weight", 300, 900}, {"head.weight", 300, 900}}, all);
    EXPECT_EQ(starved, (std::vector<bool>{true, false}));
    // Every expert silent over the same steps: nothing trains, so no expert is starved by the router.
    const auto allQuiet = starvedExperts(
        {{"experts.0.w.weight", 100, 200}, {"experts.1.w.weight", 100, 200}, {"experts.2.w.weight", 100, 200}}, all);
    EXPECT_EQ(allQuiet, (std::vector<bool>{false, false, false}));
}

// The temperature itself logged as a scalar (Recorder.end_step(loss, temperature=...)) climbs from 1
// to 10.6 from step 200 on while nothing else moves, until exp() of the logits it scales overflows
// float16: the logged quantity is the precursor, and the text calls it that.
TEST(Precursor, ALoggedScalarInsideTheModelCanBeThePrecursor)
{
    SeriesRun run(1000, [](int64_t) { return 0.4; });
    for (size_t r = 950; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    std::vector<double> temperature, accuracy;
    for (int64_t step : run.steps) {
        temperature.push_back(step < 200 ? 1.0 : 1.0 + 9.6 * double(step - 200) / 749.0);
        accuracy.push_back(std::min(0.99, 0.5 + double(step) / 1000.0)); // a metric that rises too: not a quantity inside the model
    }
    ScanInputs inputs = ScanInputs::fromMemory(
        run.steps, {{"loss", run.loss}, {"grad_norm", run.gradNorm}, {"temperature", temperature}, {"accuracy", accuracy}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 195);
    EXPECT_LE(blowup->onsetStep, 300);
    ASSERT_FALSE(blowup->layers.empty());
    EXPECT_EQ(blowup->layers.front(), "temperature");
    EXPECT_NE(blowup->cause.find("began in the logged temperature"), std::string::npos) << blowup->cause;
}

// The same climb logged as an entropy: a value of 10 says nothing about an exp() overflow, and a
// climb of one decade without a limit is not a precursor. The blow-up stays sudden.
TEST(Precursor, ALoggedEntropyNearElevenIsNoExpLimit)
{
    SeriesRun run(1000, [](int64_t) { return 0.4; });
    for (size_t r = 950; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    std::vector<double> entropy;
    for (int64_t step : run.steps)
        entropy.push_back(step < 200 ? 1.0 : 1.0 + 9.6 * double(step - 200) / 749.0);
    ScanInputs inputs =
        ScanInputs::fromMemory(run.steps, {{"loss", run.loss}, {"grad_norm", run.gradNorm}, {"actor/entropy", entropy}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden) << blowup->cause;
}

namespace {

// A gradient norm around 1 that jumps x1e4 at step 330 and is NaN from 340, with the learning rate
// `lrAt` logged beside it, scanned.
struct JumpUnderSchedule
{
    explicit JumpUnderSchedule(const std::function<double(int64_t)>& lrAt)
        : run(360, [](int64_t) { return 0.3; })
        , inputs(scanned(run, lrAt))
        , context(inputs, ScanConfig{})
    {
        EXPECT_TRUE(detectNonfiniteAndBlowup(context));
    }
    static ScanInputs scanned(SeriesRun& run, const std::function<double(int64_t)>& lrAt)
    {
        std::vector<double> lr;
        for (int64_t step : run.steps) {
            lr.push_back(lrAt(step));
            if (step >= 330)
                run.gradNorm[size_t(step)] = step >= 340 ? NAN : 1e4;
            if (step >= 340)
                run.loss[size_t(step)] = NAN;
        }
        return ScanInputs::fromMemory(run.steps, {{"loss", run.loss}, {"grad_norm", run.gradNorm}, {"lr", lr}});
    }
    SeriesRun run;
    ScanInputs inputs;
    ScanContext context;
};

} // namespace

// A learning rate that grows x1.04 a step from step 200 (a schedule bug): the gradient norm holds
// its level, then jumps at 330. The updates grew with the learning rate for 130 steps: a gradual
// blow-up from where the learning rate began to climb, whose text says so (issue 50, seen on real
// float16 autocast runs of the families corpus).
TEST(Precursor, AJumpAtTheTopOfAClimbingLearningRateIsGradualFromWhereTheClimbBegan)
{
    JumpUnderSchedule scan([](int64_t step) { return step < 200 ? 1e-3 : 1e-3 * std::pow(1.04, double(step - 200)); });
    const Incident* blowup = blowupOf(scan.context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 199);
    EXPECT_LE(blowup->onsetStep, 201);
    EXPECT_NE(blowup->cause.find("driven by the learning rate"), std::string::npos) << blowup->cause;
    EXPECT_EQ(blowup->cause.find("Sudden"), std::string::npos) << blowup->cause;
    EXPECT_NE(blowup->suggestion.find("learning-rate schedule"), std::string::npos) << blowup->suggestion;
}

// The same jump under a learning rate that decays (a cosine schedule), or that stepped up once at
// step 250 and stayed (a step schedule): nothing climbed toward it, so it stays one sudden batch.
TEST(Precursor, AJumpUnderADecayingOrOnceSteppedLearningRateStaysSudden)
{
    const std::vector<std::function<double(int64_t)>> schedules{
        [](int64_t step) { return 1e-3 * (0.55 + 0.45 * std::cos(3.14159 * double(step) / 360.0)); },
        [](int64_t step) { return step < 250 ? 1e-3 : 1e-2; },
    };
    for (const auto& schedule : schedules) {
        JumpUnderSchedule scan(schedule);
        const Incident* blowup = blowupOf(scan.context);
        ASSERT_TRUE(blowup);
        EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden) << blowup->cause;
        EXPECT_EQ(blowup->onsetStep, 330) << blowup->cause;
    }
}

// A module output climbing x2.6 from 3.5 to 9 over 900 steps (one expert learning, in a run of
// several): 1.2x below exp()'s float16 limit, but an expert's output is no exp() input, so the climb
// is too small for a precursor and the NaN at 1000 stays sudden. The same climb in the output of an
// adapter inside the classifier head (its logits) is the precursor (issue 50: a mixture of experts
// with every expert logged found a false precursor in one expert's growth).
TEST(Precursor, AModerateClimbNearExpsLimitIsAPrecursorOnlyInWhatExpIsTakenOf)
{
    for (const std::string module : {"experts.1.fc2", "head.lora_b"}) {
        SeriesRun run(1100, [](int64_t) { return 0.3; });
        for (size_t r = 1000; r < run.steps.size(); ++r)
            run.loss[r] = run.gradNorm[r] = NAN;
        ScanInputs inputs = run.inputs();
        std::mt19937 rng(11);
        std::normal_distribution<double> noise(0.0, 1.0);
        inputs.addTable("activations", {"encoder", module}, run.steps,
                        {{"max", run.table(2, [&](int64_t step, size_t c) {
                              const double wobble = std::pow(10.0, 0.004 * noise(rng));
                              if (step >= 1000)
                                  return c == 0 ? 2.f : NAN;
                              if (c == 0)
                                  return float(2.0 * wobble);
                              const double level = step < 100 ? 3.5 : 3.5 * std::pow(9.0 / 3.5, double(step - 100) / 899.0);
                              return float(level * wobble);
                          })}});
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        if (module == "head.lora_b") {
            EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
            ASSERT_FALSE(blowup->layers.empty());
            EXPECT_EQ(blowup->layers.front(), module);
        } else {
            EXPECT_EQ(blowup->pattern, BlowupPattern::Sudden) << blowup->cause;
            EXPECT_EQ(blowup->cause.find("began in the output of"), std::string::npos) << blowup->cause;
        }
    }
}

// PPO with an entropy term of the wrong sign: the policy's log standard deviation falls from step
// 300 on, its norm from 1.5 to 13 (x8.7, under a decade, but exp() of it moved by e^11.5), and the
// gradient norm climbs with it (gradients through exp(-log_std) scale with it) until the float16
// log-probabilities overflow at 1400. The blow-up lives in the log-scale parameter, said as one. A
// hidden layer's weights that grew by the same factor are no precursor.
TEST(Precursor, ALogScaleParameterIsMeasuredByWhatExpMakesOfIt)
{
    for (const std::string parameter : {"policy.log_std", "policy.body.weight"}) {
        SeriesRun run(1450, [](int64_t) { return 0.3; });
        for (size_t r = 0; r < run.steps.size(); ++r) {
            if (r >= 1400)
                run.loss[r] = run.gradNorm[r] = NAN;
            else if (r >= 320)
                run.gradNorm[r] *= std::pow(10.0, 3.0 * double(r - 320) / 1080.0);
        }
        ScanInputs inputs = run.inputs();
        std::mt19937 rng(3);
        std::normal_distribution<double> noise(0.0, 1.0);
        inputs.addTable("layers", {"policy.mean.weight", parameter}, run.steps,
                        {{"param_norm", run.table(2, [&](int64_t step, size_t c) {
                              if (step > 1400) // the update of the NaN step wrote NaN
                                  return NAN;
                              const double wobble = std::pow(10.0, 0.003 * noise(rng));
                              if (c == 0)
                                  return float(2.5 * wobble);
                              return float((step < 300 ? 1.5 : 1.5 + 11.5 * double(step - 300) / 1099.0) * wobble);
                          })}});
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
        if (parameter == "policy.log_std") {
            EXPECT_GE(blowup->onsetStep, 290);
            EXPECT_LE(blowup->onsetStep, 420);
            ASSERT_FALSE(blowup->layers.empty());
            EXPECT_EQ(blowup->layers.front(), parameter);
            EXPECT_NE(blowup->cause.find("began in the weights of policy.log_std, a log-scale parameter"),
                      std::string::npos)
                << blowup->cause;
            EXPECT_NE(blowup->suggestion.find("entropy"), std::string::npos) << blowup->suggestion;
        } else {
            EXPECT_EQ(blowup->cause.find("began in the weights of"), std::string::npos) << blowup->cause;
        }
    }
}

// A policy's hidden layer whose output grew x3.2 to 8.9 while it learned: near exp()'s float16
// limit by value, but nothing takes exp() of a hidden layer, so it is no precursor and the text
// claims no limit.
TEST(Precursor, AHiddenLayerNearElevenIsNoExpLimit)
{
    SeriesRun run(1100, [](int64_t) { return 0.3; });
    for (size_t r = 1000; r < run.steps.size(); ++r)
        run.loss[r] = run.gradNorm[r] = NAN;
    ScanInputs inputs = run.inputs();
    std::mt19937 rng(12);
    std::normal_distribution<double> noise(0.0, 1.0);
    inputs.addTable("activations", {"policy.body"}, run.steps,
                    {{"max", run.table(1, [&](int64_t step, size_t) {
                          if (step >= 1000)
                              return NAN;
                          const double wobble = std::pow(10.0, 0.004 * noise(rng));
                          const double level = step < 100 ? 2.8 : 2.8 * std::pow(8.9 / 2.8, double(step - 100) / 899.0);
                          return float(level * wobble);
                      })}});
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->cause.find("began in the output of policy.body"), std::string::npos) << blowup->cause;
    EXPECT_EQ(blowup->cause.find("exp() overflows"), std::string::npos) << blowup->cause;
}

// Heteroscedastic regression trained with a hand-written Gaussian likelihood in float16: on
// noise-free targets its log-variance head falls from about -1 (step 200) to -11 for 800 steps
// while the loss improves, until exp(-log_var) overflows float16 (above 11.09). The module's output
// says by its name that exp() is taken of it: its largest magnitude is the drift, measured by what
// exp() makes of it, and named with the limit. A hidden layer that grew the same way is no precursor.
TEST(Precursor, ALogVarianceHeadFallingIntoExpsLimitIsTheDrift)
{
    for (const std::string module : {"log_var", "body.0"}) {
        SeriesRun run(1100, [](int64_t step) { return step < 200 ? 0.3 : 0.3 - 0.2 * double(step - 200) / 800.0; });
        for (size_t r = 1000; r < run.steps.size(); ++r)
            run.loss[r] = run.gradNorm[r] = NAN;
        ScanInputs inputs = run.inputs();
        std::mt19937 rng(5);
        std::normal_distribution<double> noise(0.0, 1.0);
        const auto lowest = [&](int64_t step) {
            const double wobble = std::pow(10.0, 0.004 * noise(rng));
            return (step < 200 ? -1.0 : -1.0 - 10.1 * double(step - 200) / 799.0) * wobble;
        };
        inputs.addTable("activations", {"mean", module}, run.steps,
                        {{"min", run.table(2, [&](int64_t step, size_t c) {
                              return step >= 1000 ? NAN : float(c == 0 ? -0.9 : lowest(step));
                          })},
                         {"max", run.table(2, [&](int64_t step, size_t c) {
                              return step >= 1000 ? NAN : float(c == 0 ? 0.9 : lowest(step) + 1.5);
                          })}});
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        if (module == "log_var") {
            EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
            EXPECT_GE(blowup->onsetStep, 180);
            EXPECT_LE(blowup->onsetStep, 320);
            ASSERT_FALSE(blowup->layers.empty());
            EXPECT_EQ(blowup->layers.front(), "log_var");
            EXPECT_NE(blowup->cause.find("began in the output of log_var, a log-scale output"), std::string::npos)
                << blowup->cause;
            EXPECT_NE(blowup->cause.find("its largest magnitude grew from"), std::string::npos) << blowup->cause;
            EXPECT_NE(blowup->cause.find("exp() overflows float16 above 11.09"), std::string::npos) << blowup->cause;
            EXPECT_NE(blowup->suggestion.find("gaussian_nll_loss"), std::string::npos) << blowup->suggestion;
        } else {
            EXPECT_EQ(blowup->cause.find("began in the output of body.0"), std::string::npos) << blowup->cause;
            EXPECT_EQ(blowup->cause.find("exp() overflows"), std::string::npos) << blowup->cause;
        }
    }
}

// A LoRA adapter's output climbs from its zero initialisation to 10, ever slower, while the loss
// sinks to its floor, then holds there, just under exp()'s float16 limit, for 500 steps until one
// batch crosses it. It stopped climbing, but it is where the failure came from: the drift held at
// the limit, said so. A hidden layer that did the same explains nothing (nothing takes exp() of it).
TEST(Precursor, AnOutputThatClimbedIntoTheExpLimitAndHeldThereIsTheDrift)
{
    for (const std::string module : {"head.lora_b", "body.hidden"}) {
        SeriesRun run(1250, [](int64_t) { return 0.3; });
        for (size_t r = 1200; r < run.steps.size(); ++r)
            run.loss[r] = run.gradNorm[r] = NAN;
        ScanInputs inputs = run.inputs();
        std::mt19937 rng(21);
        std::normal_distribution<double> noise(0.0, 1.0);
        inputs.addTable("activations", {"encoder", module}, run.steps,
                        {{"max", run.table(2, [&](int64_t step, size_t c) {
                              const double wobble = std::pow(10.0, 0.01 * noise(rng));
                              if (step >= 1200)
                                  return c == 0 ? 2.f : NAN;
                              if (c == 0)
                                  return float(2.0 * wobble);
                              // From its zero initialisation, fast at first, then slower as it
                              // nears the top (Adam's steps on a loss at its floor), as the
                              // adapter's did: 1 at step 80, 6 at 320, 9.4 at 640.
                              const double t = std::pow(double(step + 1) / 350.0, 1.5);
                              return float(10.2 * (1.0 - std::exp(-t)) * wobble);
                          })}});
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        if (module == "head.lora_b") {
            EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
            EXPECT_LE(blowup->onsetStep, 500); // in the climb, not where it held
            ASSERT_FALSE(blowup->layers.empty());
            EXPECT_EQ(blowup->layers.front(), module);
            EXPECT_NE(blowup->cause.find("and held there"), std::string::npos) << blowup->cause;
            EXPECT_NE(blowup->cause.find("exp() overflows float16 above 11.09"), std::string::npos) << blowup->cause;
        } else {
            EXPECT_EQ(blowup->cause.find("began in the output of body.hidden"), std::string::npos) << blowup->cause;
        }
    }
}

// A clipped LSTM whose warm-up never ends: the logged gradient norm sits at the clip (1.0) while the
// loss falls to its best around step 150 and then climbs, faster and faster, four orders of
// magnitude. One NaN loss at 365 is followed by finite (diverged) rows and NaN for good at 380. It is
// all one blow-up, gradual from where the loss left its best level, never a NaN the training
// "recovered" from or a growth of "0 steps", nor an onset while the loss still improved.
TEST(Precursor, ANanAfterTheLossDivergedUnderAClippedGradientNormIsThatDivergence)
{
    SeriesRun run(400, [](int64_t step) {
        if (step < 150)
            return 3.0 * std::pow(0.3 / 3.0, double(step) / 150.0);
        const double t = double(step - 150) / 215.0;
        return 0.3 * std::pow(10.0, 4.5 * t * t);
    });
    for (size_t r = 0; r < run.steps.size(); ++r) {
        run.gradNorm[r] = 1.0 - 1e-7 * double(r % 3); // clipped
        if (r == 365 || r >= 380)
            run.loss[r] = run.gradNorm[r] = NAN;
    }
    ScanInputs inputs = run.inputs();
    ScanContext context(inputs, ScanConfig{});
    ASSERT_TRUE(detectNonfiniteAndBlowup(context));
    const Incident* blowup = blowupOf(context);
    ASSERT_TRUE(blowup);
    EXPECT_EQ(blowup->severity, Severity::Critical);
    EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
    EXPECT_GE(blowup->onsetStep, 140) << blowup->cause;
    EXPECT_LT(blowup->onsetStep, 300) << blowup->cause;
    EXPECT_EQ(blowup->nonfiniteStep, std::optional<int64_t>(365)) << blowup->cause;
    EXPECT_NE(blowup->cause.find("Gradual divergence: the loss rose"), std::string::npos) << blowup->cause;
    for (const auto& incident : context.report.incidents)
        EXPECT_EQ(incident.cause.find("recovered"), std::string::npos) << incident.cause;
}

// A gradient norm that climbs x1000 over 300 steps to NaN under a logged learning rate that never
// moved: the text may not blame a schedule that grew too high. Without the learning rate logged it
// still says the rate was too high for this point of training, the likeliest cause.
TEST(Precursor, AGradientExplosionUnderAConstantLearningRateDoesNotBlameTheSchedule)
{
    for (const bool logged : {true, false}) {
        SeriesRun run(700, [](int64_t) { return 0.5; });
        std::vector<double> lr;
        for (size_t r = 0; r < run.steps.size(); ++r) {
            if (r >= 650)
                run.loss[r] = run.gradNorm[r] = NAN;
            else if (r >= 350)
                run.gradNorm[r] *= std::pow(10.0, 3.0 * double(r - 350) / 300.0);
            lr.push_back(3e-4);
        }
        std::map<std::string, std::vector<double>> series = {{"loss", run.loss}, {"grad_norm", run.gradNorm}};
        if (logged)
            series["lr"] = lr;
        ScanInputs inputs = ScanInputs::fromMemory(run.steps, series);
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
        if (logged) {
            EXPECT_NE(blowup->cause.find("The learning rate was constant (0.0003)"), std::string::npos) << blowup->cause;
            EXPECT_EQ(blowup->cause.find("Learning rate too high"), std::string::npos) << blowup->cause;
            EXPECT_NE(blowup->suggestion.find("what grew inside the model"), std::string::npos) << blowup->suggestion;
        } else {
            EXPECT_NE(blowup->cause.find("Learning rate too high"), std::string::npos) << blowup->cause;
        }
    }
}

// A router's largest logit climbs from 3 to 6.5 for 600 steps from step 250 (x2.2, far below
// exp()'s float16 limit of 11.09 as logged) until its gate overflows at 900. exp() of it grew
// e^3.5 (x33): the router is the precursor, the blow-up gradual from where it began, its text the
// router's. The same climb in a classifier head beside no experts is learning, no precursor.
TEST(Precursor, ARoutersLogitsAreMeasuredByWhatTheGatesExpMakesOfThem)
{
    for (const std::string module : {"moe.gate", "head"}) {
        SeriesRun run(950, [](int64_t) { return 0.4; });
        for (size_t r = 900; r < run.steps.size(); ++r)
            run.loss[r] = run.gradNorm[r] = NAN;
        ScanInputs inputs = run.inputs();
        std::mt19937 rng(5);
        std::normal_distribution<double> noise(0.0, 1.0);
        inputs.addTable("activations", {module}, run.steps,
                        {{"max", run.table(1, [&](int64_t step, size_t) {
                              if (step >= 900)
                                  return NAN;
                              const double level = step < 250 ? 3.0 : 3.0 + 3.5 * double(step - 250) / 649.0;
                              return float(level * std::pow(10.0, 0.01 * noise(rng)));
                          })}});
        inputs.addTable("layers", {"moe.gate.weight", "moe.experts.0.fc.weight", "moe.experts.1.fc.weight", "head.weight"},
                        run.steps, {{"param_norm", run.table(4, [](int64_t, size_t) { return 1.0f; })}});
        ScanContext context(inputs, ScanConfig{});
        ASSERT_TRUE(detectNonfiniteAndBlowup(context));
        const Incident* blowup = blowupOf(context);
        ASSERT_TRUE(blowup);
        if (module == "moe.gate") {
            EXPECT_EQ(blowup->pattern, BlowupPattern::Gradual) << blowup->cause;
            EXPECT_GE(blowup->onsetStep, 220) << blowup->cause;
            EXPECT_LE(blowup->onsetStep, 350) << blowup->cause;
            ASSERT_FALSE(blowup->layers.empty());
            EXPECT_EQ(blowup->layers.front(), "moe.gate");
            EXPECT_NE(blowup->cause.find("began in the output of moe.gate, the router of moe.experts"), std::string::npos)
                << blowup->cause;
            EXPECT_NE(blowup->suggestion.find("router z-loss"), std::string::npos) << blowup->suggestion;
        } else {
            EXPECT_EQ(blowup->cause.find("began in the output of head"), std::string::npos) << blowup->cause;
        }
    }
}
