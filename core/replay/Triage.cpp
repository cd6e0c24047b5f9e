#include "Triage.h"
#include "core/NumberText.h"

#include <cmath>
#include <cstdio>

namespace nanscope {

namespace {

struct RoleNames
{
    TriageRole role;
    const char* name;
    const char* key;
};
constexpr RoleNames kRoles[] = {{TriageRole::Incident, "incident", "incident"},
                                {TriageRole::IncidentAgain, "incident again", "incident_again"},
                                {TriageRole::EarlierCheckpoint, "earlier checkpoint", "earlier_checkpoint"},
                                {TriageRole::NeighbourBatch, "neighbour batch", "neighbour_batch"}};

struct LabelNames
{
    TriageLabel label;
    const char* name;
    const char* key;
};
constexpr LabelNames kLabels[] = {{TriageLabel::Data, "data", "data"},
                                  {TriageLabel::State, "state", "state"},
                                  {TriageLabel::DataAndState, "data x state", "data_x_state"},
                                  {TriageLabel::NotReproducible, "not reproducible", "not_reproducible"},
                                  {TriageLabel::Undetermined, "undetermined", "undetermined"}};

std::string number(double value)
{
    return numberText(value, 6);
}

std::string steps(const std::vector<const TriageReplay*>& replays)
{
    std::string text;
    for (const TriageReplay* r : replays)
        text += (text.empty() ? "" : ", ") + std::to_string(r->batchStep);
    return text;
}

// Two replays of the same files agree when they blow up at the same op with the same loss, bit
// for bit (NaN matching NaN): anything else means some op is not deterministic.
bool sameOutcome(const TriageReplay& a, const TriageReplay& b)
{
    const bool sameLoss = (std::isnan(a.loss) && std::isnan(b.loss)) || a.loss == b.loss;
    return sameLoss && a.badOp == b.badOp && a.badModule == b.badModule && a.forwardNonfinite == b.forwardNonfinite &&
           a.backwardNonfinite == b.backwardNonfinite;
}

} // namespace

std::string triageRoleName(TriageRole role)
{
    for (const auto& r : kRoles)
        if (r.role == role)
            return r.name;
    return "";
}

std::string triageRoleKey(TriageRole role)
{
    for (const auto& r : kRoles)
        if (r.role == role)
            return r.key;
    return "";
}

std::optional<TriageRole> triageRoleFromKey(const std::string& key)
{
    for (const auto& r : kRoles)
        if (key == r.key)
            return r.role;
    return std::nullopt;
}

std::string triageLabelName(TriageLabel label)
{
    for (const auto& l : kLabels)
        if (l.label == label)
            return l.name;
    return "";
}

std::string triageLabelKey(TriageLabel label)
{
    for (const auto& l : kLabels)
        if (l.label == label)
            return l.key;
    return "";
}

std::optional<TriageLabel> triageLabelFromKey(const std::string& key)
{
    for (const auto& l : kLabels)
        if (key == l.key)
            return l.label;
    return std::nullopt;
}

bool triageReplayBlewUp(const TriageReplay& replay, const std::optional<double>& typicalLoss)
{
    if (!replay.ran)
        return false;
    if (replay.forwardNonfinite || replay.backwardNonfinite || !std::isfinite(replay.loss))
        return true;
    return lossBlewUp(replay.loss, BlowupBaseline{typicalLoss, std::nullopt});
}

std::string triageResultText(const TriageReplay& replay, const std::optional<double>& typicalLoss)
{
    if (!replay.ran)
        return "not run: " + replay.error;
    if (!replay.badOp.empty()) {
        const std::string where = replay.badModule.empty() ? "(root)" : replay.badModule;
        return std::string(replay.forwardNonfinite ? "NaN/Inf" : "NaN/Inf gradient") + " at " + replay.badOp +
               " in " + where;
    }
    if (!std::isfinite(replay.loss))
        return "non-finite loss";
    if (triageReplayBlewUp(replay, typicalLoss))
    {
        char factor[32];
        std::snprintf(factor, sizeof factor, "%.3g", std::abs(replay.loss) / *typicalLoss);
        return std::string("blown up (loss x") + factor + " the typical)";
    }
    return "finite";
}

namespace {

// The replays of a triage by what they asked.
struct SortedReplays
{
    const TriageReplay* incident = nullptr;
    const TriageReplay* again = nullptr;
    const TriageReplay* earlier = nullptr;
    std::vector<const TriageReplay*> neighbours;         // those that ran, of healthy steps
    std::vector<const TriageReplay*> incidentNeighbours; // those that ran, of steps that were incidents
    bool neighboursMissing = true;
};

SortedReplays sortReplays(const TriageEvidence& evidence)
{
    SortedReplays sorted;
    for (const TriageReplay& r : evidence.replays) {
        switch (r.role) {
        case TriageRole::Incident:
            sorted.incident = &r;
            break;
        case TriageRole::IncidentAgain:
            sorted.again = &r;
            break;
        case TriageRole::EarlierCheckpoint:
            sorted.earlier = &r;
            break;
        case TriageRole::NeighbourBatch:
            if (r.ran && r.wasIncident)
                sorted.incidentNeighbours.push_back(&r);
            else if (r.ran) {
                sorted.neighbours.push_back(&r);
                sorted.neighboursMissing = false;
            }
            break;
        }
    }
    return sorted;
}

// The label of an incident that reproduces: the batch on the earlier checkpoint says whether the
// batch alone does it, the other batches on this checkpoint whether the state alone does.
TriageVerdict labelReproducedIncident(TriageVerdict verdict, const SortedReplays& sorted, const TriageEvidence& evidence)
{
    const TriageReplay* earlier = sorted.earlier;
    const auto& neighbours = sorted.neighbours;
    const auto& incidentNeighbours = sorted.incidentNeighbours;
    const bool neighboursMissing = sorted.neighboursMissing;
    auto blewUp = [&](const TriageReplay* r) { return r && triageReplayBlewUp(*r, evidence.typicalLoss); };
    const std::string step = std::to_string(evidence.step);
    const std::string checkpoint = std::to_string(sorted.incident->checkpointStep);
    const bool earlierRan = earlier && earlier->ran;
    const bool batchAlone = earlierRan && blewUp(earlier);
    std::vector<const TriageReplay*> badNeighbours;
    for (const TriageReplay* n : neighbours)
        if (blewUp(n))
            badNeighbours.push_back(n);
    const bool stateAlone = !badNeighbours.empty();
    const std::string earlierCheckpoint = earlierRan ? std::to_string(earlier->checkpointStep) : std::string();
    if (!earlierRan)
        verdict.details.push_back(earlier && !earlier->error.empty()
                                      ? "Batch " + step + " on an earlier checkpoint: not run (" + earlier->error + ")."
                                      : "There is no checkpoint before " + checkpoint + ": whether the batch alone does it is not known.");
    if (!incidentNeighbours.empty())
        verdict.details.push_back("Batches " + steps(incidentNeighbours) +
                                  " were incidents of their own in training: replayed, but not counted as evidence "
                                  "about the state.");
    if (neighboursMissing)
        verdict.details.push_back(incidentNeighbours.empty()
                                      ? "No other saved batch could be replayed on checkpoint " + checkpoint +
                                            ": whether the state alone does it is not known."
                                      : "No batch of a healthy step was saved near step " + step +
                                            ": whether the state alone does it is not known (only other "
                                            "incidents' batches were at hand).");

    if (stateAlone) {
        verdict.label = TriageLabel::State;
        verdict.why = "Other batches (" + steps(badNeighbours) + ") blow up on checkpoint " + checkpoint +
                      " too: the model's state alone does it" +
                      (batchAlone ? ", and batch " + step + " blows up on checkpoint " + earlierCheckpoint +
                                        " as well, so the state was likely bad already there."
                                  : std::string("."));
        return verdict;
    }
    if (batchAlone) {
        verdict.label = TriageLabel::Data;
        verdict.why = "Batch " + step + " blows up on the earlier checkpoint " + earlierCheckpoint + " too" +
                      (neighboursMissing ? std::string()
                                         : " while the other batches (" + steps(neighbours) +
                                               ") stay finite on checkpoint " + checkpoint) +
                      ": the batch alone does it.";
        return verdict;
    }
    if (earlierRan && !neighboursMissing) {
        verdict.label = TriageLabel::DataAndState;
        verdict.why = "Batch " + step + " is finite on the earlier checkpoint " + earlierCheckpoint +
                      " and the other batches (" + steps(neighbours) + ") are finite on checkpoint " + checkpoint +
                      ": it takes this batch on this state.";
        return verdict;
    }
    if (earlierRan) {
        // The batch needs this state; whether this state needs the batch is not known.
        verdict.label = TriageLabel::State;
        verdict.why = "Batch " + step + " is finite on the earlier checkpoint " + earlierCheckpoint +
                      ": the state of checkpoint " + checkpoint +
                      " is needed (with no other batch to replay, data x state is not ruled out).";
        return verdict;
    }
    if (!neighboursMissing) {
        verdict.label = TriageLabel::Data;
        verdict.why = "The other batches (" + steps(neighbours) + ") stay finite on checkpoint " + checkpoint +
                      ": the batch is needed (with no earlier checkpoint to replay it on, data x state is not ruled out).";
        return verdict;
    }
    verdict.label = TriageLabel::Undetermined;
    verdict.why = "Batch " + step + " blows up on checkpoint " + checkpoint +
                  ", but there is no earlier checkpoint and no other saved batch to tell the batch from the state.";
    return verdict;
}

} // namespace

TriageVerdict judgeTriage(const TriageEvidence& evidence)
{
    TriageVerdict verdict;
    const SortedReplays sorted = sortReplays(evidence);
    const TriageReplay* incident = sorted.incident;
    const TriageReplay* again = sorted.again;
    auto blewUp = [&](const TriageReplay* r) { return r && triageReplayBlewUp(*r, evidence.typicalLoss); };
    const std::string step = std::to_string(evidence.step);

    if (!incident || !incident->ran) {
        verdict.label = TriageLabel::Undetermined;
        verdict.why = "The replay of batch " + step + " could not run" +
                      (incident && !incident->error.empty() ? ": " + incident->error : std::string("."));
        return verdict;
    }
    const std::string checkpoint = std::to_string(incident->checkpointStep);
    const std::string pair = "batch " + step + " on checkpoint " + checkpoint;
    if (incident->checkpointStep >= 0 && incident->checkpointStep < evidence.step)
        verdict.details.push_back("No checkpoint of step " + step + " was saved: checkpoint " + checkpoint + " is " +
                                  std::to_string(evidence.step - incident->checkpointStep) +
                                  " steps older, so the state the step ran on is only approximated.");

    // Determinism first: a replay that does not repeat itself says nothing reliable about the rest.
    const bool twice = again && again->ran;
    if (!twice)
        verdict.details.push_back("The second replay of " + pair + " did not run" +
                                  (again && !again->error.empty() ? ": " + again->error : std::string()) +
                                  "; determinism is not checked.");
    if (twice && blewUp(incident) != blewUp(again)) {
        verdict.label = TriageLabel::NotReproducible;
        verdict.why = "Replaying " + pair + " twice gave different results (" +
                      triageResultText(*incident, evidence.typicalLoss) + ", then " +
                      triageResultText(*again, evidence.typicalLoss) +
                      "): the computation is not deterministic, so the incident cannot be pinned on the batch or the state.";
        return verdict;
    }
    if (twice && !sameOutcome(*incident, *again))
        verdict.details.push_back("The two replays of " + pair + " both blow up but differ (loss " +
                                  number(incident->loss) + " vs " + number(again->loss) +
                                  "): some op is not deterministic.");
    if (!blewUp(incident)) {
        verdict.label = TriageLabel::NotReproducible;
        verdict.why = "Replaying " + pair + (twice ? " twice" : "") +
                      " stays finite: the saved step does not reproduce the incident, which points at "
                      "nondeterminism in training (GPU kernels, data loading) or at the hardware.";
        return verdict;
    }

    return labelReproducedIncident(std::move(verdict), sorted, evidence);
}

} // namespace nanscope
