#pragma once

// What triage replays besides the incident's own step: the batches of neighbouring steps on the
// incident's checkpoint (does the state alone blow up?). A neighbour must be a healthy step: a
// batch of a step that was itself an incident in training proves nothing about the state, so it is
// replayed and shown, marked, but judgeTriage (Triage.h) does not count it. `nanscope triage`
// calls these; they were judgements inside the command.

#include <cstdint>
#include <set>
#include <vector>

namespace nanscope {

class RunSource;

// Up to this many healthy neighbours on each side of the step.
inline constexpr int kTriageNeighboursEachSide = 2;

// The steps that were incidents in training: a non-finite loss or gradient norm, a skipped step
// (by /scalars/skipped or a skip event), a non-finite loss event, or a step the recorder captured
// (a spike).
std::set<int64_t> trainingIncidentSteps(const RunSource& run);

struct NeighbourBatch
{
    int64_t step = -1;
    bool wasIncident = false;
};

// The saved batches nearest `step` (`savedBatches` ascending, `step` among them or not): up to
// kTriageNeighboursEachSide healthy ones on each side, and the incidents met on the way (at most
// as many), in step order.
std::vector<NeighbourBatch> triageNeighbours(const std::vector<int64_t>& savedBatches, int64_t step,
                                             const std::set<int64_t>& incidentSteps);

} // namespace nanscope
