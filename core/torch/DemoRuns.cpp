#include "core/torch/DemoRuns.h"

#include "core/torch/Guard.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace nanscope {

namespace {
// One scenario of the demo: what goes wrong, from which step, on which seed.
DemoScenario scenario(const char* name, const char* description, DemoFailure failure, int64_t failureStep, uint64_t seed)
{
    DemoScenario s;
    s.name = name;
    s.description = description;
    s.failure = failure;
    s.failureStep = failureStep;
    s.seed = seed;
    return s;
}
} // namespace

std::vector<DemoScenario> demoScenarios()
{
    std::vector<DemoScenario> runs{
        scenario("healthy", "A healthy MLP with BatchNorm: ordinary minibatch noise, cosine learning-rate decay.",
                 DemoFailure::None, 250, 1),
        scenario("sudden-blowup", "One batch holds fill values (999999999); the next update destroys the weights.",
                 DemoFailure::CorruptBatch, 230, 2),
        scenario("gradual-blowup", "The learning rate ramps up from step 100 until the gradients explode.",
                 DemoFailure::LearningRateRamp, 100, 3),
        scenario("division-by-zero",
                 "A feature normalisation without eps divides by zero on one constant sample; the step is skipped.",
                 DemoFailure::DivisionByZero, 180, 4),
        scenario("batchnorm-poisoned",
                 "A NaN input poisons BatchNorm running statistics; the step is skipped, training loss recovers, "
                 "evaluation breaks.",
                 DemoFailure::PoisonedBatchNorm, 200, 5),
    };
    runs[0].schedule = DemoLearningRateSchedule::Cosine;
    runs[2].steps = 600;
    return runs;
}

namespace {

constexpr int64_t kFeatures = 16;
constexpr int64_t kClasses = 4;
constexpr int64_t kBatch = 32;
constexpr int64_t kEvalBatch = 128;
constexpr double kFillValue = 999999999.0;

struct Stage
{
    std::string path; // module path, as named_modules() gives it
    std::string kind; // module class name
    torch::jit::Module module;
    bool reluAfter = false;
};

// Builds TorchScript modules from source so that checkpoints are TorchScript archives that replay.
class ModelBuilder
{
public:
    explicit ModelBuilder(std::string runName)
        : m_prefix("__torch__.nanscope_demo." + sanitize(runName) + ".")
    {
    }

    torch::jit::Module linear(const std::string& path, int64_t in, int64_t out)
    {
        auto m = newModule(path, "Linear");
        const double bound = 1.0 / std::sqrt(double(in));
        m.register_parameter("weight", torch::empty({out, in}).uniform_(-bound, bound).requires_grad_(), false);
        m.register_parameter("bias", torch::empty({out}).uniform_(-bound, bound).requires_grad_(), false);
        m.define(R"(
def forward(self, x):
    return torch.linear(x, self.weight, self.bias)
)");
        return m;
    }

    torch::jit::Module batchNorm(const std::string& path, int64_t features)
    {
        auto m = newModule(path, "BatchNorm1d");
        m.register_parameter("weight", torch::ones({features}).requires_grad_(), false);
        m.register_parameter("bias", torch::zeros({features}).requires_grad_(), false);
        m.register_buffer("running_mean", torch::zeros({features}));
        m.register_buffer("running_var", torch::ones({features}));
        m.define(R"(
def forward(self, x):
    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var,
                            self.training, 0.1, 1e-05, False)
)");
        return m;
    }

    // The bug this demo is about: standardising each sample with no eps in the divisor.
    torch::jit::Module featureNorm(const std::string& path)
    {
        auto m = newModule(path, "FeatureNorm");
        m.define(R"(
def forward(self, x):
    centered = x - x.mean(dim=[1], keepdim=True)
    scale = x.std(dim=[1], keepdim=True)
    return centered / scale
)");
        return m;
    }

    torch::jit::Module model(const std::vector<Stage>& stages)
    {
        torch::jit::Module root(m_prefix + "Model");
        root.register_attribute("training", c10::BoolType::get(), true);
        std::ostringstream source;
        source << "\ndef forward(self, x):\n";
        for (const auto& stage : stages) {
            root.register_module(stage.path, stage.module);
            source << "    x = self." << stage.path << ".forward(x)\n";
            if (stage.reluAfter)
                source << "    x = torch.relu(x)\n";
        }
        source << "    return x\n";
        root.define(source.str());
        return root;
    }

private:
    static std::string sanitize(const std::string& name)
    {
        std::string out;
        for (char c : name)
            out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        return out;
    }

    torch::jit::Module newModule(const std::string& path, const std::string& kind)
    {
        // One class per instance: modules built apart must not share a qualified class name.
        torch::jit::Module m(m_prefix + kind + "_" + sanitize(path));
        m.register_attribute("training", c10::BoolType::get(), true);
        return m;
    }

    std::string m_prefix;
};

// The learning-rate ramp trains a regression: a quadratic-like loss diverges by the textbook,
// geometrically, once the step size passes 2 / (largest curvature).
bool isRegression(const DemoScenario& scenario)
{
    return scenario.failure == DemoFailure::LearningRateRamp;
}

std::vector<Stage> buildStages(ModelBuilder& builder, const DemoScenario& scenario)
{
    const int64_t h = scenario.hiddenWidth;
    std::vector<Stage> stages;
    if (scenario.failure == DemoFailure::DivisionByZero)
        stages.push_back({"norm", "FeatureNorm", builder.featureNorm("norm"), false});
    const bool withBatchNorm =
        scenario.failure == DemoFailure::None || scenario.failure == DemoFailure::PoisonedBatchNorm;
    stages.push_back({"fc1", "Linear", builder.linear("fc1", kFeatures, h), !withBatchNorm});
    if (withBatchNorm)
        stages.push_back({"bn1", "BatchNorm1d", builder.batchNorm("bn1", h), true});
    stages.push_back({"fc2", "Linear", builder.linear("fc2", h, h), true});
    stages.push_back({"fc3", "Linear", builder.linear("fc3", h, isRegression(scenario) ? 1 : kClasses), false});
    return stages;
}

double learningRateAt(const DemoScenario& s, int64_t step)
{
    const double t = double(step) / double(std::max<int64_t>(s.steps, 1));
    double lr = s.learningRate;
    switch (s.schedule) {
    case DemoLearningRateSchedule::Constant:
        break;
    case DemoLearningRateSchedule::Cosine:
        lr *= 0.5 * (1.0 + std::cos(M_PI * t)) * 0.9 + 0.1;
        break;
    case DemoLearningRateSchedule::StepDecay:
        lr *= std::pow(0.3, std::floor(t * 3.0));
        break;
    case DemoLearningRateSchedule::Warmup:
        lr *= std::min(1.0, (step + 1) / (0.1 * double(s.steps)));
        break;
    }
    if (s.failure == DemoFailure::LearningRateRamp && step > s.failureStep)
        lr *= std::pow(10.0, double(step - s.failureStep) / 150.0); // ten times larger every 150 steps
    return lr;
}

class DemoTrainer
{
public:
    DemoTrainer(std::string directory, DemoScenario scenario)
        : m_directory(std::move(directory))
        , m_scenario(std::move(scenario))
        , m_builder(m_scenario.name)
    {
    }

    Status run(const ProgressCallback& progress)
    {
        torch::manual_seed(m_scenario.seed);
        m_centres = torch::randn({kClasses, kFeatures}) * 0.6; // overlapping classes: the loss plateaus, as real ones do
        m_stages = buildStages(m_builder, m_scenario);
        m_model = m_builder.model(m_stages);
        m_model.train();
        std::vector<torch::Tensor> tensors;
        for (const auto& p : m_model.named_parameters(true))
            tensors.push_back(p.value);
        torch::optim::SGD optimiser(tensors, torch::optim::SGDOptions(m_scenario.learningRate).momentum(0.9));

        auto [evalInputs, evalTargets] = sampleBatch(kEvalBatch);

        // The demo runs are LibTorch loops guarded like any user's: the Guard writes the run.
        const bool skipNonfinite = m_scenario.failure == DemoFailure::DivisionByZero ||
                                   m_scenario.failure == DemoFailure::PoisonedBatchNorm;
        GuardOptions options;
        options.activationsEvery = m_scenario.activationsEvery;
        options.checkpointEvery = m_scenario.checkpointEvery;
        options.saveBatchWithCheckpoint = true; // every checkpointed step replays, and triage has neighbours
        options.logTargets = false;
        options.lossName = lossName();
        options.runName = m_scenario.name;
        options.attributes = {{"framework", std::string("libtorch ") + TORCH_VERSION + " (nanscope demo)"},
                              {"description", m_scenario.description}};
        // A careful training loop keeps the evidence: the first few non-finite or exploding steps
        // (spikes by the recorders' rule, its defaults).
        options.spikeCaptures = 3;
        // Two scenarios show a loop that skips bad steps; the blow-ups show one that does not.
        options.skipNonfinite = skipNonfinite;
        Guard guard(m_directory, m_model, options);

        int64_t lastStep = m_scenario.steps;
        if (m_scenario.cutShortAtStep >= 0)
            lastStep = std::min(lastStep, m_scenario.cutShortAtStep);
        int64_t firstNonfinite = -1;

        for (int64_t step = 0; step < lastStep; ++step) {
            if (!reportProgress(progress, double(step) / double(lastStep), m_scenario.name))
                return Error{"cancelled"};
            auto [inputs, targets] = sampleBatch(kBatch);
            injectFailure(step, inputs);
            const double lr = learningRateAt(m_scenario, step);
            static_cast<torch::optim::SGDOptions&>(optimiser.param_groups()[0].options()).lr(lr);

            guard.beginStep(step, inputs, targets);
            torch::Tensor x = inputs;
            for (auto& stage : m_stages) {
                x = stage.module.forward({x}).toTensor();
                guard.observe(stage.path, x, stage.kind);
                if (stage.reluAfter)
                    x = torch::relu(x);
            }
            torch::Tensor loss = lossOf(x, targets);
            optimiser.zero_grad();
            loss.backward();
            // Evaluated on the weights this step trained on (the Guard writes the step's row at endStep).
            const double evalLoss = evaluate(evalInputs, evalTargets);
            if (guard.endStep(loss, optimiser, {{"eval_loss", evalLoss}}))
                optimiser.step();
            if (!guard.lastStep().finite && firstNonfinite < 0)
                firstNonfinite = step;
            if (firstNonfinite >= 0 && !skipNonfinite && step - firstNonfinite >= m_scenario.stepsAfterFailure)
                break; // the user gives up on a diverged run
        }
        guard.close();
        reportProgress(progress, 1.0, m_scenario.name);
        return Status::success();
    }

private:
    std::string lossName() const { return isRegression(m_scenario) ? "mse" : "cross_entropy"; }

    torch::Tensor lossOf(const torch::Tensor& outputs, const torch::Tensor& targets) const
    {
        if (isRegression(m_scenario))
            return torch::mse_loss(outputs, targets);
        return torch::nn::functional::cross_entropy(outputs, targets);
    }

    std::pair<torch::Tensor, torch::Tensor> sampleBatch(int64_t size)
    {
        if (isRegression(m_scenario)) {
            auto inputs = torch::randn({size, kFeatures}) * m_scenario.inputNoise;
            auto targets = inputs.matmul(m_centres[0].unsqueeze(1)) + 0.1 * torch::randn({size, 1});
            return {inputs, targets};
        }
        auto targets = torch::randint(kClasses, {size}, torch::kLong);
        auto inputs = m_centres.index_select(0, targets) + torch::randn({size, kFeatures}) * m_scenario.inputNoise;
        // A few wrong labels, as in any real data set.
        auto flip = torch::rand({size}) < 0.05;
        targets = torch::where(flip, torch::randint(kClasses, {size}, torch::kLong), targets);
        return {inputs, targets};
    }

    void injectFailure(int64_t step, torch::Tensor& inputs)
    {
        if (step != m_scenario.failureStep)
            return;
        switch (m_scenario.failure) {
        case DemoFailure::CorruptBatch:
            // A few records read from a file with a fill value where data was missing; the
            // signs vary as they would after the loader's own normalisation.
            for (int64_t row : {3, 11, 17, 29})
                inputs[row] = torch::sign(torch::randn({kFeatures})) * kFillValue;
            break;
        case DemoFailure::DivisionByZero:
            inputs[5].zero_(); // a dead sensor: a constant sample has zero spread
            break;
        case DemoFailure::PoisonedBatchNorm:
            inputs[2][7] = std::nan("");
            break;
        default:
            break;
        }
    }

    double evaluate(const torch::Tensor& inputs, const torch::Tensor& targets)
    {
        torch::NoGradGuard noGrad;
        m_model.eval();
        const auto logits = m_model.forward({inputs}).toTensor();
        m_model.train();
        return lossOf(logits, targets).item<double>();
    }

    std::string m_directory;
    DemoScenario m_scenario;
    ModelBuilder m_builder;
    torch::Tensor m_centres;
    std::vector<Stage> m_stages;
    torch::jit::Module m_model;
};

} // namespace

Status writeDemoRun(const std::string& runDirectory, const DemoScenario& scenario, const ProgressCallback& progress)
{
    try {
        torch::set_num_threads(1); // tiny models: threads cost more than they give
        DemoTrainer trainer(runDirectory, scenario);
        return trainer.run(progress);
    } catch (const c10::Error& e) {
        return Error{"demo run " + scenario.name + " failed: " + e.what_without_backtrace()};
    } catch (const GuardError& e) {
        return Error{"demo run " + scenario.name + ": " + e.what()};
    } catch (const std::exception& e) {
        return Error{"demo run " + scenario.name + " failed: " + e.what()};
    }
}

} // namespace nanscope
