#pragma once

// Internal to core/torch (includes LibTorch): one part of the Guard (Guard.cpp).
// Copies of optimizer state that later steps cannot change, for the Guard's rollback.

#include "core/torch/GuardModel.h"

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nanscope::optimizersnapshot {

torch::Tensor deepCopy(const torch::Tensor& t);

// A copy of one parameter's optimizer state that later steps cannot change (the optimizers
// update their state tensors in place, and OptimizerParamState::clone() shares them). Null for
// a state type the rollback does not know.
std::unique_ptr<torch::optim::OptimizerParamState> deepCopy(const torch::optim::OptimizerParamState& state);

// True for the optimizers whose state deepCopy knows.
bool rollbackKnows(torch::optim::Optimizer& optimizer);

constexpr const char* kKnownOptimizers = "Adam, AdamW, SGD, RMSprop, Adagrad";

// The optimizer's own count of the updates it applied (the largest step() among its parameters'
// states; 0 before its first update), for run.h5's optimizer_step: Adam, AdamW, RMSprop and
// Adagrad keep one. Nothing for an optimizer that keeps none (SGD, LBFGS). Reads, never changes.
std::optional<int64_t> updateCount(torch::optim::Optimizer& optimizer);

// How an optimizer's state names a parameter: its TensorImpl's address as a string up to torch 2.x's
// middle releases, the address itself since (ska::flat_hash_map<void*, ...>).
using OptimizerStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

// A good step's weights, buffers and optimizer state: what a rollback returns to.
struct GoodState
{
    int64_t step = -1;
    std::vector<torch::Tensor> parameters, buffers;
    std::vector<std::pair<OptimizerStateKey, std::unique_ptr<torch::optim::OptimizerParamState>>> optimizer;
};

// Copies the model's and the optimizer's state as of `step`; nothing when the optimizer holds a
// state type deepCopy does not know (no snapshot is better than half of one).
std::optional<GoodState> takeGoodState(const guardmodel::ModelAccess& model, torch::optim::Optimizer& optimizer,
                                       int64_t step);

// Puts `good` back into the model and the optimizer; `good` stays intact for a later rollback.
void restoreGoodState(const GoodState& good, guardmodel::ModelAccess& model, torch::optim::Optimizer& optimizer);

} // namespace nanscope::optimizersnapshot
