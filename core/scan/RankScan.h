#pragma once

// The scan of a multi-rank run: every rank's own scan (in parallel where the reads allow it) and
// the rules that need all ranks at once: the first rank to go non-finite and what it saw, ranks
// whose local loss or gradient norm departs from the others', ranks that stopped or lag.
// docs/scan.md lists what each reports.

#include "core/Progress.h"
#include "core/Result.h"
#include "core/run/RankSet.h"
#include "core/scan/Incident.h"
#include "core/scan/ScanConfig.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

namespace scan {
struct ScanFacts;
// The facts read beside one rank's run that its scan cannot read itself (its optimizer states);
// what could not be read is a note. core/open/RunScan passes its reader of them.
using RankFactsReader = std::function<ScanFacts(const RunSource& rank, std::vector<std::string>& notes)>;
} // namespace scan

// How a rank ended, judged from what it wrote about itself (rank.json), its last logged step and
// the other ranks' (docs/run-format.md, "Multi-rank runs"). One judgement for scan, info and the window.
enum class RankEnd {
    Finished,  // closed its recorder, as far as the others
    Running,   // no sign of a stop: live, or the whole job ended together
    Stopped,   // did not close while others did, or stopped well behind the furthest rank
    Lagging,   // closed its recorder well behind the furthest rank
    Unreadable // no readable run
};
const char* toString(RankEnd end);

struct RankSummary
{
    int rank = 0;
    std::string directory;
    RankEnd end = RankEnd::Running;
    RankState recordedState = RankState::Unknown;
    std::optional<int64_t> firstStep;
    std::optional<int64_t> lastStep;
    std::optional<int64_t> firstNonfiniteStep; // its own loss or local gradient norm
    size_t incidents = 0;                      // its own scan's
    std::string error;                         // unreadable: why
};

struct RankScanReport
{
    // Every incident, each with its rank: the rank rules' and each rank's own scan's (one found on
    // several ranks at the same step is listed once, naming the others in its note).
    ScanReport report;
    std::vector<RankSummary> ranks;
    int worldSize = 0;
    // The rank to show first: the first to go non-finite, else the first with a critical incident,
    // else the first readable rank.
    int focusRank = 0;
};

// Scans every rank of `ranks`, each with the facts `factsOf` reads beside it, and then the ranks
// together. Cancelling through `progress` returns an error; a rank whose own scan fails is noted
// and the others go on. Called by `scanRun` (core/open/RunScan.h), the one entry point.
Result<RankScanReport> scanRanks(const RankSet& ranks, const ScanConfig& config, const ProgressCallback& progress,
                                 const scan::RankFactsReader& factsOf);

} // namespace nanscope

namespace nanscope::scan {

// What the rank rules read of one rank: its own series, loaded once.
struct RankSeries
{
    int rank = 0;
    const RankMember* member = nullptr;
    bool readable = false;
    std::string error;
    std::vector<int64_t> steps;
    std::vector<double> loss;
    std::vector<double> localGradNorm; // empty when the rank did not log it
    size_t rows = 0;                         // rows with a step and a loss
    std::optional<size_t> firstNonfiniteRow; // loss or local gradient norm
    std::optional<int64_t> firstNonfiniteStep;
};

// Each rank's /scalars steps, loss and local_grad_norm (read one rank after the other).
std::vector<RankSeries> loadRankSeries(const RankSet& ranks);

// Only where each rank first went non-finite (and how many rows it has): steps, loss and
// localGradNorm stay empty. Read in blocks of 8,192 rows that stop at the first non-finite row:
// what the window needs to open on the rank that went first. Holding every rank's whole series for
// it was half of opening 64 ranks (a fresh vector of each series per rank, each page faulted in).
std::vector<RankSeries> loadRankFirstNonfinite(const RankSet& ranks);

// The ranks that went non-finite first (their own loss or local gradient), at the earliest such
// step; empty when none did, when fewer than two ranks logged steps, or when every rank did at
// that step (then no rank led). The rank rule reports it; the window opens on leaders.front().
struct NonfiniteLeaders
{
    int64_t step = 0;
    std::vector<const RankSeries*> leaders;  // by rank
    std::optional<int64_t> othersStep;       // the first step any other rank went non-finite
    bool everyRankAtOnce = false;
};
NonfiniteLeaders findNonfiniteLeaders(const std::vector<RankSeries>& series);

// The rank whose folder explains the run (replay, triage, the report, the window's first view):
// for a step, the first rank to go non-finite that saved both the checkpoint and the batch of that
// step, else the lowest rank that did; without a step, the first rank to go non-finite, else the
// rank shown. `why` says which rule chose it ("the first rank to go non-finite", ...).
int rankToExplain(const RankSet& ranks, std::optional<int64_t> step, std::string* why = nullptr);

struct RankScanContext
{
    const RankSet& ranks;
    const std::vector<RankSeries>& series;
    const ScanConfig& config;
    // Each rank's own scan, per series entry: what it found on its own run (a bad batch, say) is
    // the one judgement the rank rules quote, not a second reading of the same tables.
    const std::vector<Result<ScanReport>>& rankReports;
    std::vector<Incident> incidents;
    std::vector<std::string> notes;
    // Written by the stopped-ranks rule, per series entry.
    std::vector<RankEnd> ends;
    // Written by the first-non-finite rule.
    std::optional<int> firstNonfiniteRank;
};

// The first rank to go non-finite and what it saw: its inputs and local gradients (RankNonfinite).
Status detectFirstNonfiniteRank(RankScanContext& context);
// A rank's local loss or gradient norm far from the other ranks' at the same steps (RankDivergence).
Status detectRankDivergence(RankScanContext& context);
// Ranks that stopped, lag or left no readable run (RankStopped); writes context.ends.
Status detectStoppedRanks(RankScanContext& context);

} // namespace nanscope::scan
