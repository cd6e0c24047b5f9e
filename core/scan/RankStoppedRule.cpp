// Ranks that stopped, lag, or left no readable run. A killed rank cannot write, so the judgement
// combines what each rank wrote about itself (rank.json) with the steps each logged: a rank that
// did not close while others did stopped; one well behind the furthest rank stopped (or, if it
// closed itself, lags). Writes context.ends for the summary every command shows.
#include "core/scan/Diagnosis.h"
#include "core/scan/RankScan.h"

#include <algorithm>

namespace nanscope::scan {

Status detectStoppedRanks(RankScanContext& context)
{
    const auto& all = context.series;
    int64_t furthest = 0;
    bool anyStep = false;
    bool anyFinished = false;
    for (const RankSeries& rank : all) {
        if (rank.readable && !rank.steps.empty()) {
            furthest = anyStep ? std::max(furthest, rank.steps.back()) : rank.steps.back();
            anyStep = true;
        }
        anyFinished = anyFinished || (rank.readable && rank.member->state == RankState::Finished);
    }
    const int64_t lag = std::max<int64_t>(0, context.config.rankLagSteps);
    context.ends.assign(all.size(), RankEnd::Running);
    for (size_t i = 0; i < all.size(); ++i) {
        const RankSeries& rank = all[i];
        RankStoppedFacts facts;
        facts.rank = rank.rank;
        facts.furthestStep = furthest;
        facts.othersFinished = anyFinished;
        Incident incident;
        incident.kind = IncidentKind::RankStopped;
        incident.rank = rank.rank;
        incident.severity = Severity::Critical;
        incident.evidence.series = "ranks";
        if (!rank.readable) {
            context.ends[i] = RankEnd::Unreadable;
            facts.readable = false;
            facts.error = rank.error;
            incident.onsetStep = 0;
            incident.evidence.note = rank.error;
            applyDiagnosis(incident, diagnoseRankStopped(facts));
            context.incidents.push_back(std::move(incident));
            continue;
        }
        const RankState state = rank.member->state;
        const bool behind = rank.steps.empty() || rank.steps.back() < furthest - lag;
        if (!rank.steps.empty())
            facts.lastStep = rank.steps.back();
        if (state == RankState::Finished) {
            context.ends[i] = behind ? RankEnd::Lagging : RankEnd::Finished;
            facts.closedItself = true;
            if (!behind)
                continue;
            incident.severity = Severity::Warning;
        } else if ((state == RankState::Running && anyFinished) || behind) {
            context.ends[i] = RankEnd::Stopped;
        } else {
            continue; // running, or the whole job ended together
        }
        incident.onsetStep = facts.lastStep.value_or(0);
        incident.evidence.windowBeginStep = incident.onsetStep;
        incident.evidence.windowEndStep = furthest;
        incident.evidence.count = furthest - incident.onsetStep;
        incident.evidence.note = "rank.json: " + std::string(toString(state)) + "; last logged step " +
                                 (facts.lastStep ? std::to_string(*facts.lastStep) : std::string("none")) +
                                 ", furthest rank's " + std::to_string(furthest);
        applyDiagnosis(incident, diagnoseRankStopped(facts));
        context.incidents.push_back(std::move(incident));
    }
    return Status::success();
}

} // namespace nanscope::scan
