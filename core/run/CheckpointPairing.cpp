#include "core/run/CheckpointPairing.h"

#include <iterator>

namespace nanscope {

std::optional<PairedCheckpoint> checkpointForStep(const SteppedFiles& checkpoints, int64_t step)
{
    auto after = checkpoints.upper_bound(step);
    if (after == checkpoints.begin())
        return std::nullopt;
    const auto paired = std::prev(after);
    PairedCheckpoint result;
    result.step = paired->first;
    result.ownStep = paired->first == step;
    if (paired != checkpoints.begin())
        result.earlierStep = std::prev(paired)->first;
    return result;
}

bool hasCheckpointAndBatch(const SteppedFiles& checkpoints, const SteppedFiles& batches, int64_t step)
{
    const auto paired = checkpointForStep(checkpoints, step);
    return paired && paired->ownStep && batches.count(step) > 0;
}

std::vector<int64_t> stepsWithCheckpointAndBatch(const SteppedFiles& checkpoints, const SteppedFiles& batches)
{
    std::vector<int64_t> steps;
    for (const auto& [step, file] : checkpoints)
        if (batches.count(step))
            steps.push_back(step);
    return steps;
}

} // namespace nanscope
