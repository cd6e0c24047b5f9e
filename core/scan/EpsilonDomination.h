#pragma once

// When Adam's update is dominated by epsilon: one judgement for the scan's adam_epsilon rule and
// for the optimizer flags of `nanscope stats` and the Checkpoints view (core/importers/OptimizerState),
// so that the two never draw the line on either side of one half (`>= 0.5` and `> 0.5`).

namespace nanscope {

// An element is dominated where sqrt(v_hat) <= eps: Adam's step there is lr * m / eps instead of a
// normalised lr-sized step. A parameter, or an optimizer state as a whole, is epsilon-dominated
// when at least this share of its elements are.
inline constexpr double kEpsilonDominatedShare = 0.5;

inline bool epsilonDominated(double share, double threshold = kEpsilonDominatedShare)
{
    return share >= threshold;
}

} // namespace nanscope
