#pragma once

// What an optimizer's saved state says about each parameter, as values: read by
// core/importers/OptimizerState (readOptimizerState), shown by the Checkpoints view and written by
// the JSON codec. Apart from the reader, so that the views use it without the importers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// A trainable parameter of the model, in the order the model registers them (model.parameters()).
struct ModelParameter
{
    std::string name;
    std::vector<int64_t> shape;
};

struct OptimizerParameterState
{
    int64_t index = 0; // the optimizer's own index (torch numbers parameters 0, 1, ... over its groups)
    size_t group = 0; // which param_groups entry holds it
    std::string name; // the model's name, or "param #3 [64, 3]" when the names could not be matched
    std::vector<int64_t> shape; // of its state tensors; empty without state
    bool hasState = false; // false: the optimizer has stepped it never (it had no gradient yet)
    std::optional<double> step;
    std::optional<double> expAvgRms; // RMS of exp_avg (the first moment)
    std::optional<double> expAvgSqRootRms; // RMS of sqrt(exp_avg_sq), i.e. sqrt(mean(exp_avg_sq))
    // The last update Adam applied, weight decay aside: lr * m_hat / (sqrt(v_hat) + eps) with
    // m_hat = exp_avg / (1 - beta1^step) and v_hat = exp_avg_sq / (1 - beta2^step) (max_exp_avg_sq
    // with amsgrad). Its RMS over the elements, and the share of elements where sqrt(v_hat) <= eps.
    // Empty when the state or the group lacks a figure the formula needs.
    std::optional<double> updateRms;
    std::optional<double> epsilonDominatedShare;
    int64_t nonfinite = 0; // NaN and Inf elements of the moment tensors: the two counts below
    int64_t nonfiniteExpAvg = 0;
    int64_t nonfiniteExpAvgSq = 0; // of max_exp_avg_sq with amsgrad, the one the update divides by
};

struct OptimizerGroup
{
    std::optional<double> lr, eps, beta1, beta2, weightDecay;
    std::vector<int64_t> parameterIndices;
};

struct OptimizerStateSummary
{
    std::string path;
    // Adam, AdamW and their kin (an exp_avg_sq in the state). When false the moments above stay
    // empty and a note names the state keys found instead ("momentum_buffer": SGD).
    bool isAdam = false;
    // True when every parameter has its model name (see readOptimizerState).
    bool namesMapped = false;
    std::vector<OptimizerGroup> groups;
    std::vector<OptimizerParameterState> parameters; // in the optimizer's index order
    std::vector<std::string> warnings, notes; // each naming the file
};

// The update's RMS in units of the group's learning rate. Adam moves each element by about lr while
// the gradient keeps its size and sign (m_hat / sqrt(v_hat) = 1), less when it is noisy; far below 1
// the parameter has stalled, above 1 the latest gradients outgrew the history in exp_avg_sq. The
// group's lr is the one saved, i.e. after the scheduler's last step: a warm-up or decay changes it
// a little from the lr the last update used. Empty without an update or a positive lr.
inline std::optional<double> updateToLearningRate(const OptimizerParameterState& parameter, const OptimizerGroup& group)
{
    if (!parameter.updateRms || !group.lr || !(*group.lr > 0))
        return std::nullopt;
    return *parameter.updateRms / *group.lr;
}

} // namespace nanscope
