#include "core/record/CapturePolicy.h"

#include "CaptureDefaults.h" // generated from python/nanscope_recorder/capture_policy.json

namespace nanscope {

CaptureBudget CaptureBudget::defaults()
{
    return {capturedefaults::kSpikeCaptures, capturedefaults::kLaterNonfiniteCaptures};
}

double defaultSpikeMads()
{
    return capturedefaults::kSpikeMads;
}

int64_t defaultSpikeWindow()
{
    return capturedefaults::kSpikeWindow;
}

namespace {

bool withinBudget(int used, int budget)
{
    return budget < 0 || used < budget;
}

} // namespace

CapturePolicy::Capture CapturePolicy::decide(bool finite, bool spike)
{
    if (!finite) {
        if (m_nonfinite == 0) {
            ++m_nonfinite;
            return Capture::FirstNonfinite;
        }
        if (!withinBudget(m_nonfinite - 1, m_budget.laterNonfiniteCaptures))
            return Capture::None;
        ++m_nonfinite;
        return Capture::LaterNonfinite;
    }
    if (!spike || !withinBudget(m_spikes, m_budget.spikeCaptures))
        return Capture::None;
    ++m_spikes;
    return Capture::Spike;
}

std::string CapturePolicy::describe(Capture capture)
{
    switch (capture) {
    case Capture::FirstNonfinite:
        return "the run's first non-finite step";
    case Capture::LaterNonfinite:
        return "a later non-finite step";
    case Capture::Spike:
        return "a spike";
    case Capture::None:
        break;
    }
    return "";
}

} // namespace nanscope
