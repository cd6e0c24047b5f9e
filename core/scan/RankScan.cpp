// The multi-rank scan's orchestrator: loads each rank's series, runs every rank's own scan on a
// few threads when the reads allow it, then the rank rules (Rank*Rule.cpp), and merges the lot.
#include "core/scan/RankScan.h"

#include "core/run/CheckpointPairing.h"
#include "core/run/RunFormat.h"
#include "core/scan/Diagnosis.h"
#include "core/scan/RunRules.h"
#include "core/scan/ScanInputs.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

namespace nanscope {

namespace rf = runformat;

const char* toString(RankEnd end)
{
    switch (end) {
    case RankEnd::Finished: return "finished";
    case RankEnd::Running: return "running";
    case RankEnd::Stopped: return "stopped";
    case RankEnd::Lagging: return "lagging";
    case RankEnd::Unreadable: return "unreadable";
    }
    return "unknown";
}

namespace scan {

namespace {

// The rank's fields loadRankSeries and loadRankFirstNonfinite share; false (with the error set)
// when the rank's run cannot be read or has no /scalars.
bool startRank(const RankMember& member, RankSeries& series)
{
    series.rank = member.rank;
    series.member = &member;
    if (!member.run) {
        series.error = member.error;
        return false;
    }
    if (!member.run->table(rf::kScalars)) {
        series.error = member.directory + ": no /scalars";
        return false;
    }
    return true;
}

bool logsLocalGradNorm(const RunSource& run)
{
    const TableInfo* scalars = run.table(rf::kScalars);
    return scalars &&
           std::find(scalars->datasets.begin(), scalars->datasets.end(), rf::kLocalGradNorm) != scalars->datasets.end();
}

// The first of `count` rows whose loss, or local gradient norm where one is given for that row, is
// not finite; a local norm series may be shorter (or empty: not logged, or unreadable).
std::optional<size_t> firstNonfiniteRow(const std::vector<double>& loss, const std::vector<double>& localGradNorm,
                                        size_t count)
{
    for (size_t row = 0; row < count; ++row) {
        const bool localBad = row < localGradNorm.size() && !std::isfinite(localGradNorm[row]);
        if (!std::isfinite(loss[row]) || localBad)
            return row;
    }
    return std::nullopt;
}

} // namespace

std::vector<RankSeries> loadRankSeries(const RankSet& ranks)
{
    std::vector<RankSeries> all;
    for (const RankMember& member : ranks.members()) {
        RankSeries series;
        if (!startRank(member, series)) {
            all.push_back(std::move(series));
            continue;
        }
        const RunSource& run = *member.run;
        auto loss = run.readSeries(rf::kScalars, rf::scalar::kLoss);
        if (!loss) {
            series.error = member.directory + ": " + loss.error();
            all.push_back(std::move(series));
            continue;
        }
        series.readable = true;
        series.steps = run.steps(rf::kScalars);
        series.loss = std::move(*loss);
        if (logsLocalGradNorm(run))
            if (auto local = run.readSeries(rf::kScalars, rf::kLocalGradNorm))
                series.localGradNorm = std::move(*local);
        const size_t rows = std::min(series.steps.size(), series.loss.size());
        series.rows = rows;
        series.steps.resize(rows);
        series.loss.resize(rows);
        if (!series.localGradNorm.empty())
            series.localGradNorm.resize(std::min(series.localGradNorm.size(), rows));
        series.firstNonfiniteRow = firstNonfiniteRow(series.loss, series.localGradNorm, rows);
        if (series.firstNonfiniteRow)
            series.firstNonfiniteStep = series.steps[*series.firstNonfiniteRow];
        all.push_back(std::move(series));
    }
    return all;
}

std::vector<RankSeries> loadRankFirstNonfinite(const RankSet& ranks)
{
    // 8,192 rows of doubles: 64 KiB, which the allocator hands back for the next block.
    constexpr size_t kBlockRows = 8192;
    std::vector<RankSeries> all;
    for (const RankMember& member : ranks.members()) {
        RankSeries series;
        if (!startRank(member, series)) {
            all.push_back(std::move(series));
            continue;
        }
        const RunSource& run = *member.run;
        const std::vector<int64_t>& steps = run.steps(rf::kScalars);
        const size_t rows = std::min(steps.size(), size_t(run.table(rf::kScalars)->rows));
        const bool local = logsLocalGradNorm(run);
        bool failed = false;
        if (rows == 0)
            if (auto loss = run.readSeriesRows(rf::kScalars, rf::scalar::kLoss, 0, 0); !loss) {
                series.error = member.directory + ": " + loss.error();
                failed = true;
            }
        for (size_t begin = 0; begin < rows && !series.firstNonfiniteRow && !failed; begin += kBlockRows) {
            const size_t count = std::min(kBlockRows, rows - begin);
            auto loss = run.readSeriesRows(rf::kScalars, rf::scalar::kLoss, int64_t(begin), int64_t(count));
            if (!loss) {
                series.error = member.directory + ": " + loss.error();
                failed = true;
                break;
            }
            // A local norm that cannot be read is left out, as loadRankSeries leaves it.
            std::vector<double> norms;
            if (local)
                if (auto read = run.readSeriesRows(rf::kScalars, rf::kLocalGradNorm, int64_t(begin), int64_t(count)))
                    norms = std::move(*read);
            if (const std::optional<size_t> row = firstNonfiniteRow(*loss, norms, count)) {
                series.firstNonfiniteRow = begin + *row;
                series.firstNonfiniteStep = steps[begin + *row];
            }
        }
        if (!failed) {
            series.readable = true;
            series.rows = rows;
        }
        all.push_back(std::move(series));
    }
    return all;
}

} // namespace scan

namespace {

using namespace scan;

// Every rank's own scan. HDF5 serialises its calls inside a thread-safe build, but the rules'
// arithmetic runs side by side.
std::vector<Result<ScanReport>> scanEachRank(const RankSet& ranks, const ScanConfig& config,
                                             const ProgressCallback& progress, const scan::RankFactsReader& factsOf,
                                             bool& cancelled)
{
    const auto& members = ranks.members();
    std::vector<Result<ScanReport>> reports(members.size(), Result<ScanReport>(Error{"not scanned"}));
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    std::atomic<bool> stop{false};
    std::mutex progressMutex;
    auto work = [&] {
        for (size_t i = next++; i < members.size() && !stop; i = next++) {
            if (members[i].run) {
                std::vector<std::string> factNotes;
                const scan::ScanFacts facts = factsOf ? factsOf(*members[i].run, factNotes) : scan::ScanFacts{};
                reports[i] = scan::applyRules(*members[i].run, config, {}, facts);
                if (reports[i])
                    reports[i]->notes.insert(reports[i]->notes.end(), factNotes.begin(), factNotes.end());
            } else
                reports[i] = Error{members[i].error};
            const size_t finished = ++done;
            if (progress) {
                std::lock_guard<std::mutex> lock(progressMutex);
                if (!progress(0.9 * double(finished) / double(members.size()),
                              "rank " + std::to_string(members[i].rank)))
                    stop = true;
            }
        }
    };
    const size_t threads = ranks.readsInParallel()
                               ? std::min<size_t>(members.size(), std::max(1u, std::thread::hardware_concurrency()))
                               : 1;
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& thread : pool)
        thread.join();
    cancelled = stop;
    return reports;
}

// One incident found on several ranks at the same step (a NaN the all-reduce spread everywhere)
// is listed once, for the first of them, naming the others.
// One incident per kind and steps: in a data-parallel job the same blow-up reaches every rank
// through the all-reduce, and each rank's scan words it for its own inputs, so the texts differ
// while the event is one. The first of `rankIncidents` (the leader's, else the lowest rank's) is kept.
void addMerged(std::vector<Incident>& merged, std::vector<Incident> rankIncidents)
{
    std::map<std::tuple<int, int64_t, int64_t>, std::pair<size_t, std::vector<int>>> seen;
    for (Incident& incident : rankIncidents) {
        // A burst is one event whether a rank saw its own loss go NaN or only the all-reduced
        // gradient norm (the other ranks' loss stays finite): one family, one entry.
        const IncidentKind family =
            incident.kind == IncidentKind::NonfiniteGradient ? IncidentKind::NonfiniteLoss : incident.kind;
        const auto key = std::make_tuple(int(family), incident.onsetStep, incident.nonfiniteStep.value_or(-1));
        auto it = seen.find(key);
        if (it != seen.end()) {
            it->second.second.push_back(*incident.rank);
            continue;
        }
        seen[key] = {merged.size(), {}};
        merged.push_back(std::move(incident));
    }
    for (auto& [key, entry] : seen) {
        if (entry.second.empty())
            continue;
        std::string others;
        for (int rank : entry.second)
            others += (others.empty() ? "" : ", ") + std::to_string(rank);
        std::string& note = merged[entry.first].evidence.note;
        note += (note.empty() ? "" : " ") + std::string("The same on rank(s) ") + others + ".";
    }
}

void sortBySeverity(std::vector<Incident>& incidents)
{
    std::stable_sort(incidents.begin(), incidents.end(), [](const Incident& x, const Incident& y) {
        if (x.severity != y.severity)
            return int(x.severity) < int(y.severity);
        return x.onsetStep < y.onsetStep;
    });
}

} // namespace

Result<RankScanReport> scanRanks(const RankSet& ranks, const ScanConfig& config, const ProgressCallback& progress,
                                 const scan::RankFactsReader& factsOf)
{
    const Error cancelledError{"scan of " + ranks.directory() + " cancelled"};
    const std::vector<RankSeries> series = loadRankSeries(ranks);
    bool cancelled = false;
    std::vector<Result<ScanReport>> perRank = scanEachRank(ranks, config, progress, factsOf, cancelled);
    if (cancelled)
        return cancelledError;

    RankScanContext context{ranks, series, config, perRank, {}, {}, {}, {}};
    for (auto rule : {detectStoppedRanks, detectFirstNonfiniteRank, detectRankDivergence})
        if (Status s = rule(context); !s)
            return Error{s.error()};

    RankScanReport result;
    result.worldSize = ranks.worldSize();
    ScanReport& report = result.report;
    report.runName = std::filesystem::path(ranks.directory()).filename().string();
    report.directory = ranks.directory();
    report.incidents = std::move(context.incidents);
    std::set<std::string> notes;
    for (std::string& note : context.notes)
        if (notes.insert(note).second)
            report.notes.push_back(std::move(note));
    std::vector<Incident> rankIncidents;
    bool anyStep = false;
    for (size_t i = 0; i < series.size(); ++i) {
        const RankSeries& rank = series[i];
        RankSummary summary;
        summary.rank = rank.rank;
        summary.directory = rank.member->directory;
        summary.recordedState = rank.member->state;
        summary.end = i < context.ends.size() ? context.ends[i] : RankEnd::Running;
        summary.error = rank.error;
        if (!rank.steps.empty()) {
            summary.firstStep = rank.steps.front();
            summary.lastStep = rank.steps.back();
            report.firstStep = anyStep ? std::min(report.firstStep, rank.steps.front()) : rank.steps.front();
            report.lastStep = anyStep ? std::max(report.lastStep, rank.steps.back()) : rank.steps.back();
            anyStep = true;
        }
        if (rank.firstNonfiniteRow)
            summary.firstNonfiniteStep = rank.steps[*rank.firstNonfiniteRow];
        if (perRank[i]) {
            summary.incidents = perRank[i]->incidents.size();
            for (Incident incident : perRank[i]->incidents) {
                incident.rank = rank.rank;
                rankIncidents.push_back(std::move(incident));
            }
            for (std::string& note : perRank[i]->notes)
                if (notes.insert(note).second)
                    report.notes.push_back(std::move(note));
        } else if (rank.member->run) {
            report.notes.push_back("rank " + std::to_string(rank.rank) + " was not scanned: " + perRank[i].error());
        }
        result.ranks.push_back(std::move(summary));
    }
    // Each rank's own incidents: the first rank to go non-finite first (its incident explains the
    // others'), then in rank order, so that a merged incident names that rank, else the lowest.
    const std::optional<int> leaderRank = context.firstNonfiniteRank;
    std::stable_sort(rankIncidents.begin(), rankIncidents.end(), [&](const Incident& a, const Incident& b) {
        const bool aLeads = leaderRank && *a.rank == *leaderRank;
        const bool bLeads = leaderRank && *b.rank == *leaderRank;
        if (aLeads != bLeads)
            return aLeads;
        return *a.rank < *b.rank;
    });
    // The other ranks' non-finite findings at the leader's step came to them through the all-reduce.
    if (context.firstNonfiniteRank) {
        const int leader = *context.firstNonfiniteRank;
        int64_t step = 0;
        for (const Incident& incident : report.incidents)
            if (incident.kind == IncidentKind::RankNonfinite)
                step = incident.onsetStep;
        for (Incident& incident : rankIncidents)
            if (*incident.rank != leader && incident.nonfiniteStep.value_or(incident.onsetStep) == step &&
                (incident.kind == IncidentKind::NonfiniteLoss || incident.kind == IncidentKind::NonfiniteGradient ||
                 incident.kind == IncidentKind::Blowup)) {
                std::string& note = incident.evidence.note;
                note += (note.empty() ? "" : " ") + spreadFromRankNote(leader, step);
            }
    }
    addMerged(report.incidents, std::move(rankIncidents));
    sortBySeverity(report.incidents);

    if (context.firstNonfiniteRank) {
        result.focusRank = *context.firstNonfiniteRank;
    } else {
        result.focusRank = ranks.members().front().rank;
        for (const RankMember& member : ranks.members())
            if (member.run) {
                result.focusRank = member.rank;
                break;
            }
        for (const Incident& incident : report.incidents)
            if (incident.severity == Severity::Critical && incident.rank && ranks.member(*incident.rank) &&
                ranks.member(*incident.rank)->run) {
                result.focusRank = *incident.rank;
                break;
            }
    }
    if (progress)
        progress(1.0, "done");
    return Result<RankScanReport>(std::move(result));
}

namespace scan {

int rankToExplain(const RankSet& ranks, std::optional<int64_t> step, std::string* why)
{
    const auto series = loadRankFirstNonfinite(ranks);
    const NonfiniteLeaders found = findNonfiniteLeaders(series);
    const auto saved = [&](int rank) {
        const RankMember* member = ranks.member(rank);
        if (!member || !member->run || !step)
            return false;
        const RunInfo& info = member->run->info();
        return hasCheckpointAndBatch(info.checkpoints, info.batches, *step);
    };
    const auto say = [&](const std::string& text) {
        if (why)
            *why = text;
    };
    if (step) {
        for (const RankSeries* leader : found.leaders)
            if (saved(leader->rank)) {
                say("the first rank to go non-finite, with step " + std::to_string(*step) + " saved");
                return leader->rank;
            }
        for (const RankMember& member : ranks.members())
            if (saved(member.rank)) {
                say("the lowest rank that saved step " + std::to_string(*step));
                return member.rank;
            }
    }
    if (!found.leaders.empty()) {
        say("the first rank to go non-finite");
        return found.leaders.front()->rank;
    }
    say("the rank shown first");
    return ranks.selectedRank();
}

} // namespace scan

} // namespace nanscope
