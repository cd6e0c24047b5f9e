#pragma once

// Mixture-of-experts and adapter runs, for the vanishing rule (VanishingRule.cpp): experts that
// stop receiving gradient while their siblings train are a load collapse of the router, not
// vanishing gradients; frozen base weights beside trained adapters (LoRA, PEFT) are expected.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

// "moe.experts.3.fc1.weight" -> {"moe.experts", "3"}; also "expert_3", "experts_3" and "expert3"
// path parts. Nothing for a parameter that is not inside a numbered expert.
struct ExpertName
{
    std::string group; // the experts' container path
    std::string index;
};
std::optional<ExpertName> expertOf(const std::string& parameter);

// A parameter's gradient that was zero (or far below the rest) over steps [begin, end].
struct VanishedSpan
{
    std::string parameter;
    int64_t begin = 0;
    int64_t end = 0;
};

// For each of `vanished`, whether it lies inside an expert one of whose siblings (same group,
// another index, among `allParameters`) had no vanished span overlapping it: the sibling trained
// while this one starved, so the router starved it.
std::vector<bool> starvedExperts(const std::vector<VanishedSpan>& vanished,
                                 const std::vector<std::string>& allParameters);

// The experts' container a module routes for, when its name says it is a router or a gate (not a
// gated MLP's projection, not a shared expert's sigmoid gate) and it sits beside numbered experts
// among `parameters` (Mixtral's "layers.0.block_sparse_moe.gate" beside
// "layers.0.block_sparse_moe.experts.3.w1.weight", Switch's "mlp.router.classifier" beside
// "mlp.experts.expert_0.wi.weight"). Its outputs are the logits of the gate's softmax.
std::optional<std::string> routedExperts(const std::string& module, const std::vector<std::string>& parameters);

// A parameter of an adapter (LoRA, IA3, prefix tuning, PEFT's modules_to_save is not one).
bool adapterParameter(const std::string& parameter);

} // namespace nanscope::scan
