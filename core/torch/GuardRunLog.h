#pragma once

// Internal to core/torch (includes LibTorch): one part of the Guard (Guard.cpp).
// The Guard's run.h5: its columns, fixed at the first step, and the user's scalars of each step
// checked against them.

#include "core/run/RunWriter.h"
#include "core/torch/Guard.h"
#include "core/torch/GuardModel.h"
#include "core/torch/GuardReadback.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::guardrunlog {

// What the first step shows of the columns: the user's scalars, the observed modules (and their
// kinds), the input tensors, and whether the optimizer says its learning rate.
struct FirstStepColumns
{
    bool logLearningRate = false;
    bool logOptimizerStep = false; // the optimizer counts its updates (optimizer_step)
    std::vector<std::string> userScalars;
    std::vector<std::string> activations;
    std::map<std::string, std::string> activationKinds;
    std::vector<std::string> inputs;
};

RunSchema runSchema(const GuardOptions& options, const std::string& runDirectory, const guardmodel::ModelAccess& model,
                    const FirstStepColumns& columns);

// A step's own scalars as its row: those logged from the first step on, each required. A name the
// Guard computes itself throws GuardError; a name the first step did not give goes to `notLogged`
// (run.h5's columns are fixed at the first step).
std::map<std::string, double> userScalarRow(const std::map<std::string, double>& given,
                                            const std::vector<std::string>& logged, int64_t step,
                                            std::vector<std::string>& notLogged);

using Row = std::map<std::string, std::vector<float>>;

// The /inputs row of a step from its input tensors' statistics slots (one kSlots block each, in
// `inputSlots`' order), or nothing, with `whyNot`, when the step gave other tensors than the first.
std::optional<Row> inputsRow(const std::vector<std::string>& columns, const guardreadback::NamedSlots& inputSlots,
                             const double* slots, int64_t step, std::string& whyNot);

// The /activations row of a step from the observed outputs' slots (a module called twice in the
// forward is merged into one column). A column whose module did not run that step (an expert no
// token was routed to) holds the figures of no element: min, max, mean and std NaN, nan and inf
// 0, which readers skip; `notRun` then names it. As the Python recorder writes it.
Row activationsRow(const std::vector<std::string>& columns, const guardreadback::NamedSlots& observed,
                   const double* slots, int64_t step, std::string& notRun);

} // namespace nanscope::guardrunlog
