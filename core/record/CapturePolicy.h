#pragma once

// Which incidents a recorder captures (writes the checkpoint the step ran on and its batch, and an
// incident_capture event): the one policy of the C++ Guard and the Python recorder
// (python/nanscope_recorder/capture.py), whose defaults are one table,
// python/nanscope_recorder/capture_policy.json (compiled in here as CaptureDefaults.h).
//
// - The first non-finite step of a run is always captured: it is the incident a user replays,
//   and no earlier spike may spend its place.
// - Spikes (finite steps far above the recent median) have a budget of their own.
// - Later non-finite steps (a run that never recovers would write one per step) are bounded too.
//
// LibTorch-free, so it is tested alone and shared by every recorder.

#include <cstdint>
#include <string>

namespace nanscope {

// Spikes are looked for when spikeMads is a positive number; 0 or a negative one turns them off
// (the Python recorder's spike_detection_on, python/nanscope_recorder/capture.py: the same cases,
// tests/data/capture_policy_cases.json).
inline bool spikeDetectionOn(double spikeMads)
{
    return spikeMads > 0;
}

struct CaptureBudget
{
    // -1: every one.
    int spikeCaptures;
    int laterNonfiniteCaptures;

    static CaptureBudget defaults();
};

class CapturePolicy
{
public:
    enum class Capture { None, FirstNonfinite, LaterNonfinite, Spike };

    explicit CapturePolicy(CaptureBudget budget = CaptureBudget::defaults())
        : m_budget(budget)
    {
    }

    // Whether the step just measured is captured, and as what; counts what it returns. A
    // non-finite step is never a spike.
    Capture decide(bool finite, bool spike);

    int spikesCaptured() const { return m_spikes; }

    // The event text's opening words for a capture ("first non-finite step", ...).
    static std::string describe(Capture capture);

private:
    CaptureBudget m_budget;
    int m_spikes = 0;
    int m_nonfinite = 0; // the first included
};

// The spike rule's defaults (OnlineSpikeDetector), from the same table.
double defaultSpikeMads();
int64_t defaultSpikeWindow();

} // namespace nanscope
