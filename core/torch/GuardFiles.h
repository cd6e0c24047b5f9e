#pragma once

// Internal to core/torch: the files the Guard writes into a run directory (written atomically, so a
// process killed mid-save leaves no half file under the contract's name), and the healthy batch it
// holds so that each capture leaves triage one batch of a healthy step to compare with.

#include "core/torch/GuardModel.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::guardfiles {

// Writes `path` through save(path + ".partial") and a rename.
void saveAtomically(const std::string& path, const std::function<void(const std::string&)>& save);

// Checkpoint N of the run format (checkpoints/step_N.pt) and its form file beside it, written
// first: a checkpoint found without its form would be tried as TorchScript, and a C++ module's
// archive cannot replay. With `preForwardBuffers` (one per buffer of model.norms, in order), the
// norm layers' buffers are saved as they were before the step's forward changed them, and the live
// ones are left as they were.
void saveCheckpointFiles(const std::string& path, guardmodel::ModelAccess& model,
                         const std::vector<torch::Tensor>* preForwardBuffers);

// A batch file of the run format (batches/step_N.pt): inputs, targets, loss name and step.
void saveBatchFile(const std::string& path, const torch::Tensor& inputs, const torch::Tensor& targets, int64_t step,
                   const std::string& lossName);

// The batch of the latest step that ended finite and was not captured. Held, not copied: a
// training loop gives each step new tensors, and a loop that writes into the same tensor instead
// bumps its version counter, which tells that the held values are no longer that step's.
class HealthyBatch
{
public:
    // Step `step` was healthy; `saved`: its batch file is already written.
    void hold(int64_t step, const torch::Tensor& inputs, const torch::Tensor& targets, bool saved);
    // The held step, when there is one whose batch is not written yet and still holds its values.
    std::optional<int64_t> unsavedStep() const;
    // Writes the held batch as `path`; afterwards it counts as saved.
    void save(const std::string& path, const std::string& lossName);
    void clear() { m_held.reset(); }

private:
    struct Held
    {
        int64_t step = 0;
        torch::Tensor inputs, targets;
        // The tensors' versions when held; nullopt where a tensor has none (inference tensors):
        // such a tensor is copied instead.
        std::optional<uint32_t> inputsVersion, targetsVersion;
        bool saved = false;
    };
    std::optional<Held> m_held;
};

} // namespace nanscope::guardfiles
