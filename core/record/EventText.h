#pragma once

// The /events messages of the C++ Guard, filled from the templates both recorders share
// (python/nanscope_recorder/run_format.json, "event_texts"; the Python recorder fills the same
// templates in run_format.py's event_text). Numbers are written as C's %g, lists joined by ", ".

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nanscope::eventtext {

// nonfinite_loss: "loss = nan".
std::string nonfiniteLoss(double loss);

// Why a step was bad, for skipped_step, update_applied and incident_capture.
std::string reasonNonfiniteLoss(double loss);
std::string reasonNonfiniteGradients(size_t parameterCount, const std::string& firstParameter);
std::string reasonNormOverflow();

// skipped_step: the reason, then that the optimizer step was skipped.
std::string skippedStep(const std::string& reason);
// A note: the reason, and that the training loop applied the update anyway.
std::string updateApplied(const std::string& reason);

// rollback: each param group's learning rate before and after, in group order.
std::string rollback(int64_t goodStep, int64_t streak, int64_t step, double lrFactor,
                     const std::vector<std::pair<double, double>>& learningRates);

// buffers_restored: the normalisation layers whose running statistics were put back.
std::string buffersRestored(const std::vector<std::string>& layers, int64_t step);

// checkpoint: the file relative to the run directory, and its form.
std::string checkpoint(const std::string& relativePath, const std::string& form);

} // namespace nanscope::eventtext
