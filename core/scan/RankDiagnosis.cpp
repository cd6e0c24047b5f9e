// The texts of a multi-rank run's incidents (core/scan/RankScan and the rank rules).
#include "core/scan/Diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace nanscope::scan {

namespace {
std::string rankList(const std::vector<int>& ranks)
{
    std::vector<std::string> names;
    for (int rank : ranks)
        names.push_back(std::to_string(rank));
    return joinNames(names, 6);
}
} // namespace

Diagnosis diagnoseRankNonfinite(const RankNonfiniteFacts& facts)
{
    Diagnosis d;
    const std::string rank = "rank " + std::to_string(facts.rank);
    d.cause = "Rank " + std::to_string(facts.rank) + " went non-finite first, at step " + std::to_string(facts.step) +
              (facts.sameStepRanks.empty() ? "" : " (with rank(s) " + rankList(facts.sameStepRanks) + ")") + ": its " +
              (facts.lossNonfinite ? "own loss" : "local gradient (before the all-reduce)") + " was NaN/Inf" +
              (facts.othersStep ? ", the other ranks' from step " + std::to_string(*facts.othersStep)
                                : ", while the other ranks' stayed finite") +
              ". ";
    if (!facts.badInputs.empty())
        d.cause += "The batch it was given held non-finite values (" + joinNames(facts.badInputs, 4) +
                   "): bad data on one rank, spread to every rank by the gradient all-reduce.";
    else if (!facts.extremeInputs.empty())
        d.cause += "The batch it was given held extreme values (" + joinNames(facts.extremeInputs, 4) +
                   "): finite, but large enough to overflow in the forward or backward pass; bad data on one rank, "
                   "spread to every rank by the gradient all-reduce.";
    else if (facts.inputsLogged)
        d.cause += "Its inputs were finite: the NaN arose in its forward or backward pass" +
                   (facts.badLayers.empty() ? std::string(".") : ", first in the gradient of " + joinNames(facts.badLayers, 3) + ".");
    else
        d.cause += facts.badLayers.empty() ? std::string("Its inputs are not logged.")
                                           : "Its local gradient was non-finite in " + joinNames(facts.badLayers, 3) + ".";
    d.suggestion = "Look at " + rank + "'s batch of step " + std::to_string(facts.step) +
                   " (its data shard, its loader worker, its augmentation) rather than at the model: the other ranks "
                   "computed finite values from the same weights. Guard against one rank's bad batch with a "
                   "finite check before the all-reduce (skip the step on every rank), and open the run with --rank " +
                   std::to_string(facts.rank) + " to see its series." + facts.batchNote;
    return d;
}

std::string spreadFromRankNote(int leaderRank, int64_t step)
{
    return "Rank " + std::to_string(leaderRank) + " went non-finite first at step " + std::to_string(step) +
           " (rank_nonfinite): this rank's own values were finite, and the NaN reached it through the gradient "
           "all-reduce.";
}

Diagnosis diagnoseRankDivergence(const RankDivergenceFacts& facts)
{
    Diagnosis d;
    const bool above = facts.decades > 0;
    d.cause = "Rank " + std::to_string(facts.rank) + "'s " + facts.series + " departs from the other ranks' on " +
              std::to_string(facts.steps) + " step(s) from step " + std::to_string(facts.firstStep) + ", at most x" +
              numberText(std::pow(10.0, std::fabs(facts.decades)), 2) + (above ? " above" : " below") +
              " their median (step " + std::to_string(facts.worstStep) + "). The replicas share their weights, so " +
              "a difference this large comes from what that rank is given or computes: " +
              (above ? "an extreme or mislabelled batch, a shard of other data, " : "an empty, padded or constant batch, ") +
              "or a fault of its device.";
    d.suggestion = "Compare rank " + std::to_string(facts.rank) + "'s input batches around step " +
                   std::to_string(facts.worstStep) + " with another rank's (open the run with --rank " +
                   std::to_string(facts.rank) + "); check how the sampler shards the data, and whether the rank's " +
                   "device reports errors." + facts.batchNote;
    return d;
}

Diagnosis diagnoseRankStopped(const RankStoppedFacts& facts)
{
    Diagnosis d;
    const std::string rank = "Rank " + std::to_string(facts.rank);
    if (!facts.readable) {
        d.cause = rank + " left no readable run (" + facts.error + "): it died before its first step was logged, " +
                  "or its files are elsewhere or damaged.";
        d.suggestion = "Look at that rank's own output (stderr, the launcher's log of its node) for why it ended; " +
                       std::string("a rank that never logs usually failed to initialise (device, memory, data path).");
        return d;
    }
    const std::string last = facts.lastStep ? std::to_string(*facts.lastStep) : std::string("-");
    if (facts.closedItself) {
        d.cause = rank + " closed its recorder after step " + last + " while the furthest rank reached step " +
                  std::to_string(facts.furthestStep) + ": it finished early (fewer batches in its data shard, " +
                  "or a loop that ended on that rank alone).";
        d.suggestion = "Give every rank the same number of steps (a sampler with drop_last, or a join context for "
                       "uneven inputs); a rank that leaves early makes the others hang in their next all-reduce.";
        return d;
    }
    d.cause = rank + " stopped after step " + last + " without closing its recorder (its rank.json still says " +
              "running), while " +
              (facts.othersFinished ? "other ranks closed theirs" : "the furthest rank reached step " +
                                                                        std::to_string(facts.furthestStep)) +
              ": it was killed (out of memory, the node's OOM killer, a signal) or crashed or hung there.";
    d.suggestion = "Read that rank's own stderr and its node's kernel log (dmesg: OOM kills) around that time; its "
                   "steps up to " + last + " are intact in its run.h5. The other ranks stopped because their next "
                   "all-reduce could not complete without it.";
    return d;
}

} // namespace nanscope::scan
