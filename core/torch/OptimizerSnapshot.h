#pragma once

// Internal to core/torch (includes LibTorch): one part of the Guard (Guard.cpp).
// Copies of optimizer state that later steps cannot change, for the Guard's rollback.

#include <torch/torch.h>

#include <memory>

namespace nanscope::optimizersnapshot {

torch::Tensor deepCopy(const torch::Tensor& t);

// A copy of one parameter's optimizer state that later steps cannot change (the optimizers
// update their state tensors in place, and OptimizerParamState::clone() shares them). Null for
// a state type the rollback does not know.
std::unique_ptr<torch::optim::OptimizerParamState> deepCopy(const torch::optim::OptimizerParamState& state);

// True for the optimizers whose state deepCopy knows.
bool rollbackKnows(torch::optim::Optimizer& optimizer);

constexpr const char* kKnownOptimizers = "Adam, AdamW, SGD, RMSprop, Adagrad";

} // namespace nanscope::optimizersnapshot
