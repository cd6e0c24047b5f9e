#pragma once

// Triage of an incident: which of the step's batch and the model's state it takes to blow up.
// `nanscope triage` (app/cli/TriageCommand.cpp) runs the replays and fills a TriageReplay per replay;
// judgeTriage() reads them and labels the incident. Plain values, no LibTorch and no Qt, so that
// the judgement is tested on its own (tests/core/TriageTest.cpp).
//
// The replays, for the incident's step N and the checkpoint C paired with it (the latest saved at
// or before N; a checkpoint of step N holds the state step N's forward ran on):
//   incident            batch N on checkpoint C
//   incident, again     the same once more: is the replay deterministic?
//   earlier checkpoint  batch N on the checkpoint before C: does the batch alone do it?
//   neighbour batch     the saved batches nearest N (up to 2 before, 2 after) on C whose own steps were
//                       healthy: does the state alone do it? (A batch of another incident proves nothing
//                       about the state: it is shown, marked, and not counted.)

#include "core/replay/BlowupBaseline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

enum class TriageRole { Incident, IncidentAgain, EarlierCheckpoint, NeighbourBatch };

// "incident", "incident again", "earlier checkpoint", "neighbour batch"
std::string triageRoleName(TriageRole role);
// The JSON spelling: "incident", "incident_again", "earlier_checkpoint", "neighbour_batch".
std::string triageRoleKey(TriageRole role);
std::optional<TriageRole> triageRoleFromKey(const std::string& key);

struct TriageReplay
{
    TriageRole role = TriageRole::Incident;
    int64_t checkpointStep = -1; // -1: there is no such checkpoint (then `ran` is false)
    int64_t batchStep = -1;      // -1: there is no such batch
    bool ran = false;            // false: the files are missing or the replay failed; `error` says which
    std::string error;
    // What the replay found (when it ran). The first bad op is the forward's first op with a
    // non-finite output, else the first non-finite gradient in backward order.
    bool forwardNonfinite = false;
    bool backwardNonfinite = false;
    std::string badOp;     // "aten::div"
    std::string badModule; // "norm"; "" for the root module
    double loss = 0;       // may be NaN or Inf
    // A neighbour batch whose own training step was itself an incident (non-finite, skipped, or
    // captured as a spike): shown, but no evidence about the state, so judgeTriage does not count it.
    bool wasIncident = false;
};

enum class TriageLabel {
    Data,            // the batch alone does it: on an earlier state too, and no other batch does on this one
    State,           // the state alone does it: other batches blow up on this checkpoint too
    DataAndState,    // it takes both: the batch is fine on an earlier state, other batches are fine on this one
    NotReproducible, // the saved step replays finite, or differently twice: nondeterminism or hardware
    Undetermined,    // the step's own replay failed, or nothing to compare it with
};

// "data", "state", "data x state", "not reproducible", "undetermined"
std::string triageLabelName(TriageLabel label);
// The JSON spelling: "data", "state", "data_x_state", "not_reproducible", "undetermined".
std::string triageLabelKey(TriageLabel label);
std::optional<TriageLabel> triageLabelFromKey(const std::string& key);

struct TriageEvidence
{
    int64_t step = -1;
    std::vector<TriageReplay> replays; // any order; absent comparisons are rows with ran == false
    // The run's typical training loss (median of its finite losses before the step), when known:
    // a replay whose loss is finite but kBlowupFactor times that has blown up, as the sudden
    // blow-ups do before any NaN.
    std::optional<double> typicalLoss;
};

// A finite loss this many times the typical one counts as blown up (core/replay/BlowupBaseline).
inline constexpr double kTriageBlowupFactor = kBlowupFactor;

struct TriageVerdict
{
    TriageLabel label = TriageLabel::Undetermined;
    std::string why;                  // one sentence: the label's reason
    std::vector<std::string> details; // what else the evidence says (nondeterministic ops, missing replays)
};

// True when the replay ran and blew up: a non-finite value forward or backward, a non-finite
// loss, or a finite loss kTriageBlowupFactor times the typical one.
bool triageReplayBlewUp(const TriageReplay& replay, const std::optional<double>& typicalLoss);
// "NaN/Inf at aten::div in norm", "loss 2.8e+08 (blown up)", "finite", "not run: <error>"
std::string triageResultText(const TriageReplay& replay, const std::optional<double>& typicalLoss);

TriageVerdict judgeTriage(const TriageEvidence& evidence);

} // namespace nanscope
