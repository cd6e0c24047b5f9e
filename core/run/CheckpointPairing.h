#pragma once

// Which saved checkpoint goes with step N: the one judgement replay, triage, the scan's advice and
// the rank picker share. The recorders save checkpoint N before step N's update, so checkpoint N
// holds the weights step N's forward ran on. Without it, the latest earlier checkpoint is the
// nearest state: triage replays batch N on it (does the state alone blow up?), but a replay on it
// does not reproduce step N, so replay itself asks for checkpoint N.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// Saved files by step (RunInfo::checkpoints, RunInfo::batches, listSteppedFiles).
using SteppedFiles = std::map<int64_t, std::string>;

struct PairedCheckpoint {
    int64_t step = -1;
    bool ownStep = false; // checkpoint N itself, not an earlier one
    // The checkpoint before the paired one, for triage's "earlier state" replay.
    std::optional<int64_t> earlierStep;
};

// The latest checkpoint at or before `step`; nothing when none was saved that early.
std::optional<PairedCheckpoint> checkpointForStep(const SteppedFiles& checkpoints, int64_t step);

// Whether step N has its own checkpoint and its batch: what replay reproduces exactly.
bool hasCheckpointAndBatch(const SteppedFiles& checkpoints, const SteppedFiles& batches, int64_t step);

// Every such step, ascending.
std::vector<int64_t> stepsWithCheckpointAndBatch(const SteppedFiles& checkpoints, const SteppedFiles& batches);

} // namespace nanscope
