// A LibTorch training loop guarded by nanscope::Guard, with its defences on.
//
//     guard_training_loop RUN_DIR [STEPS]
//     nanscope RUN_DIR            # then look at what it wrote
//
// Trains a small MLP with BatchNorm on a synthetic classification task with Adam. Three batches
// in a row hold a NaN (a broken record, as a real loader would pass through), from step STEPS/2:
// the Guard skips them, puts the BatchNorm statistics back after each, and after the third rolls
// the weights and Adam's state back to the last good snapshot with half the learning rate.
#include "core/torch/Guard.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace {

constexpr int64_t kFeatures = 16, kHidden = 64, kClasses = 4, kBatch = 32;

// LibTorch's C++ modules have no forward hooks: the model reports its layers' outputs to the Guard.
struct NetImpl : torch::nn::Module
{
    NetImpl()
    {
        fc1 = register_module("fc1", torch::nn::Linear(kFeatures, kHidden));
        bn1 = register_module("bn1", torch::nn::BatchNorm1d(kHidden));
        fc2 = register_module("fc2", torch::nn::Linear(kHidden, kHidden));
        out = register_module("out", torch::nn::Linear(kHidden, kClasses));
    }

    torch::Tensor forward(torch::Tensor x)
    {
        x = torch::relu(seen("bn1", bn1(seen("fc1", fc1(x)))));
        x = torch::relu(seen("fc2", fc2(x)));
        return seen("out", out(x));
    }

    const torch::Tensor& seen(const char* name, const torch::Tensor& output)
    {
        return guard ? guard->observe(name, output) : output;
    }

    torch::nn::Linear fc1{nullptr}, fc2{nullptr}, out{nullptr};
    torch::nn::BatchNorm1d bn1{nullptr};
    nanscope::Guard* guard = nullptr;
};
TORCH_MODULE(Net);

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: guard_training_loop RUN_DIR [STEPS]\n";
        return 2;
    }
    const int64_t steps = argc > 2 ? std::max(20, std::atoi(argv[2])) : 200;
    torch::manual_seed(7);
    torch::set_num_threads(1);
    const auto centres = torch::randn({kClasses, kFeatures});
    Net net;
    torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(3e-3));

    nanscope::GuardOptions options;
    options.lossName = "cross_entropy";
    options.checkpointEvery = 25;
    options.activationsEvery = 5;
    options.rollbackAfter = 3;          // roll back after three non-finite steps in a row
    options.rollbackLrFactor = 0.5;
    options.snapshotEvery = 10;
    options.restoreBuffersOnSkip = true; // a NaN batch must not poison BatchNorm's running statistics
    try {
        nanscope::Guard guard(argv[1], *net, options);
        net->guard = &guard;
        int64_t skipped = 0, rollbacks = 0;
        for (int64_t step = 0; step < steps; ++step) {
            auto targets = torch::randint(kClasses, {kBatch}, torch::kLong);
            auto inputs = centres.index_select(0, targets) + 0.8 * torch::randn({kBatch, kFeatures});
            if (step >= steps / 2 && step < steps / 2 + 3)
                inputs[step % kBatch][3] = std::nan(""); // a broken record
            guard.beginStep(step, inputs, targets);
            auto loss = torch::nn::functional::cross_entropy(net->forward(inputs), targets);
            optimizer.zero_grad();
            loss.backward();
            if (guard.endStep(loss, optimizer))
                optimizer.step();
            skipped += guard.lastStep().applied ? 0 : 1;
            rollbacks += guard.lastStep().rolledBack ? 1 : 0;
        }
        guard.close();
        std::cout << "trained " << steps << " steps into " << argv[1] << ": " << skipped << " skipped, " << rollbacks
                  << " rollback(s); learning rate x" << guard.learningRateScale() << "\n";
        return 0;
    } catch (const nanscope::GuardError& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
