#pragma once

// The spike rule a training loop applies as it goes, to decide whether a step is an incident worth
// capturing (its batch and the checkpoint before it). One rule for both recorders: the C++ Guard
// uses this class; the Python recorder's SpikeDetector (python/nanscope_recorder/defences.py) is
// the same rule, and both are checked against the same cases (tests/data/spike_rule_cases.json).
//
// A value is a spike when it exceeds the median of the last `window` values by more than `mads`
// times their median absolute deviation: a robust scale, so one earlier spike does not widen it.
// A flat history (MAD 0) still has a scale, 1e-3 of the median's size. Before `leastHistory`
// values nothing is a spike. A spike does not join the history (a level that stays up keeps being
// one), and a non-finite value is neither a spike nor history: it is an incident of its own.
//
// This is the on-line rule; the scan's SpikeRule judges a whole logged series afterwards.

#include <cstddef>
#include <deque>

namespace nanscope {

class OnlineSpikeDetector
{
public:
    static constexpr double kDefaultMads = 20.0;
    static constexpr size_t kDefaultWindow = 50;
    static constexpr size_t kDefaultLeastHistory = 20;

    explicit OnlineSpikeDetector(double mads = kDefaultMads, size_t window = kDefaultWindow,
                                 size_t leastHistory = kDefaultLeastHistory);

    // Judges `value` against the history, then adds it to the history unless it is a spike.
    bool isSpike(double value);
    double mads() const { return m_mads; }

private:
    double m_mads;
    size_t m_window;
    size_t m_leastHistory;
    std::deque<double> m_values;
};

} // namespace nanscope
