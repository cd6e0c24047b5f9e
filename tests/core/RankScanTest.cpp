// The multi-rank scan on ranks held in memory: the first rank to go non-finite and what it saw,
// rank divergence, and ranks that stopped, as a user reading `nanscope scan` of a DDP job needs them.
#include "core/run/MemoryRunSource.h"
#include "core/run/RankHeatmap.h"
#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"
#include "core/scan/RankScan.h"

#include <gtest/gtest.h>

#include <map>

#include <cmath>
#include <functional>
#include <limits>

namespace nanscope {
namespace {

namespace rf = runformat;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kWorld = 4;
constexpr int kSteps = 40;
const std::vector<std::string> kLayers{"fc1.weight", "fc1.bias", "fc2.weight"};

struct RankPlan
{
    int steps = kSteps;
    RankState state = RankState::Finished;
    std::optional<int64_t> nanInputStep;  // its input x holds 3 NaN there
    std::optional<int64_t> extremeInputStep; // its input x holds a finite 1e30 there
    std::optional<int64_t> nanLocalStep;  // its own loss and fc2.weight's local gradient are NaN there
    std::function<double(int64_t)> localScale = [](int64_t) { return 1.0; };
};

// One rank of a DDP job: a loss near 1 and a local gradient norm near 0.5 that differ a little by
// rank and step, as different batches make them.
RankMember makeRank(int rank, const RankPlan& plan)
{
    RunInfo info;
    info.directory = "/job/" + rf::rankDirName(rank);
    info.runName = "job rank " + std::to_string(rank);
    auto run = std::make_shared<MemoryRunSource>(info);
    std::vector<int64_t> steps;
    std::vector<double> loss, local, global;
    std::vector<float> layerLocal, inputNan, inputInf, inputMin, inputMax;
    for (int64_t s = 0; s < plan.steps; ++s) {
        steps.push_back(s);
        const double wobble = 1.0 + 0.05 * std::sin(double(rank * 7 + s));
        const bool bad = plan.nanLocalStep && s == *plan.nanLocalStep;
        loss.push_back(bad ? kNaN : 1.0 * wobble);
        local.push_back(bad ? kNaN : 0.5 * wobble * plan.localScale(s));
        global.push_back(0.3);
        for (size_t l = 0; l < kLayers.size(); ++l)
            layerLocal.push_back(bad && l == 2 ? float(kNaN) : 0.2f);
        inputNan.push_back(plan.nanInputStep && s == *plan.nanInputStep ? 3.f : 0.f);
        inputInf.push_back(0.f);
        inputMin.push_back(-1.5f * float(wobble));
        inputMax.push_back(plan.extremeInputStep && s == *plan.extremeInputStep ? 1e30f : 1.5f * float(wobble));
    }
    run->addSeriesTable(rf::kScalars, steps, {{"loss", loss}, {"grad_norm", global}, {rf::kLocalGradNorm, local}});
    run->addMatrixTable(rf::kLayers, kLayers, steps,
                        {{"grad_norm", std::vector<float>(layerLocal.size(), 0.3f)}, {rf::kLocalGradNorm, layerLocal}});
    run->addMatrixTable(rf::kInputs, {"x"}, steps,
                        {{"nan", inputNan}, {"inf", inputInf}, {"min", inputMin}, {"max", inputMax}});
    RankMember member;
    member.rank = rank;
    member.directory = info.directory;
    member.run = run;
    member.state = plan.state;
    return member;
}

std::unique_ptr<RankSet> makeJob(const std::map<int, RankPlan>& plans, std::vector<RankMember> extra = {})
{
    std::vector<RankMember> members = std::move(extra);
    for (int rank = 0; rank < kWorld; ++rank) {
        if (std::any_of(members.begin(), members.end(), [&](const RankMember& m) { return m.rank == rank; }))
            continue;
        auto it = plans.find(rank);
        members.push_back(makeRank(rank, it != plans.end() ? it->second : RankPlan{}));
    }
    auto set = RankSet::create("/job", kWorld, std::move(members));
    EXPECT_TRUE(set) << set.error();
    return std::move(*set);
}

std::vector<Incident> ofKind(const ScanReport& report, IncidentKind kind)
{
    std::vector<Incident> found;
    for (const Incident& incident : report.incidents)
        if (incident.kind == kind)
            found.push_back(incident);
    return found;
}

TEST(RankScan, HealthyJobHasNoRankIncidents)
{
    auto job = makeJob({});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    EXPECT_TRUE(ofKind(scanned->report, IncidentKind::RankNonfinite).empty());
    EXPECT_TRUE(ofKind(scanned->report, IncidentKind::RankDivergence).empty());
    EXPECT_TRUE(ofKind(scanned->report, IncidentKind::RankStopped).empty());
    ASSERT_EQ(scanned->ranks.size(), size_t(kWorld));
    for (const RankSummary& rank : scanned->ranks)
        EXPECT_EQ(rank.end, RankEnd::Finished);
}

TEST(RankScan, FirstNonfiniteRankIsNamedWithTheBatchItWasGiven)
{
    RankPlan poisoned;
    poisoned.nanInputStep = 20;
    poisoned.nanLocalStep = 20;
    RankPlan later; // a rank that went non-finite afterwards, as the all-reduced update reached it
    later.nanLocalStep = 22;
    auto job = makeJob({{2, poisoned}, {0, later}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto first = ofKind(scanned->report, IncidentKind::RankNonfinite);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].rank, 2);
    EXPECT_EQ(first[0].onsetStep, 20);
    EXPECT_EQ(first[0].severity, Severity::Critical);
    EXPECT_NE(first[0].evidence.note.find("x (3 NaN)"), std::string::npos) << first[0].evidence.note;
    EXPECT_EQ(first[0].layers, std::vector<std::string>{"fc2.weight"});
    EXPECT_NE(first[0].cause.find("step 22"), std::string::npos) << first[0].cause; // when the others followed
    EXPECT_EQ(scanned->focusRank, 2);
    EXPECT_EQ(scanned->ranks[2].firstNonfiniteStep, 20);
}

// A 1e30 sample is finite: the rank's incident must not call its inputs finite beside the bad-input
// incident of the same rank and step that quotes the 1e30 (the two texts read one judgement).
TEST(RankScan, ARankFedAnExtremeFiniteBatchIsToldSoBesideItsBadInputIncident)
{
    RankPlan poisoned;
    poisoned.extremeInputStep = 20;
    poisoned.nanLocalStep = 20;
    RankPlan later;
    later.nanLocalStep = 21;
    auto job = makeJob({{2, poisoned}, {0, later}, {1, later}, {3, later}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto first = ofKind(scanned->report, IncidentKind::RankNonfinite);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].rank, 2);
    EXPECT_EQ(first[0].cause.find("inputs were finite"), std::string::npos) << first[0].cause;
    EXPECT_NE(first[0].cause.find("extreme values"), std::string::npos) << first[0].cause;
    EXPECT_NE(first[0].cause.find("e+30"), std::string::npos) << first[0].cause;
    EXPECT_EQ(first[0].evidence.note.find("inputs finite"), std::string::npos) << first[0].evidence.note;
    const auto bad = ofKind(scanned->report, IncidentKind::BadInput);
    ASSERT_FALSE(bad.empty());
    EXPECT_EQ(bad[0].rank, 2);
    EXPECT_NE(bad[0].evidence.note.find("e+30"), std::string::npos) << bad[0].evidence.note;
    for (const Incident& incident : scanned->report.incidents)
        EXPECT_EQ(incident.cause.find("x?"), std::string::npos) << incident.cause;
}

TEST(RankScan, RanksGoingNonfiniteTogetherNameNoLeader)
{
    RankPlan bad;
    bad.nanLocalStep = 15;
    auto job = makeJob({{0, bad}, {1, bad}, {2, bad}, {3, bad}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    EXPECT_TRUE(ofKind(scanned->report, IncidentKind::RankNonfinite).empty());
    const auto& notes = scanned->report.notes;
    EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                            [](const std::string& n) { return n.find("no one rank led") != std::string::npos; }));
}

TEST(RankScan, RankWhoseLocalGradientDepartsFromTheOthersIsNamed)
{
    RankPlan odd;
    odd.localScale = [](int64_t step) { return step >= 30 && step <= 32 ? 100.0 : 1.0; };
    auto job = makeJob({{1, odd}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto divergent = ofKind(scanned->report, IncidentKind::RankDivergence);
    ASSERT_EQ(divergent.size(), 1u);
    EXPECT_EQ(divergent[0].rank, 1);
    EXPECT_EQ(divergent[0].onsetStep, 30);
    EXPECT_EQ(divergent[0].evidence.count, 3);
    EXPECT_EQ(divergent[0].evidence.series, "scalars/local_grad_norm");
}

TEST(RankScan, KilledRankIsStoppedAtItsLastStepWhileTheOthersFinished)
{
    RankPlan killed;
    killed.state = RankState::Running; // it could not write that it ended
    killed.steps = 25;
    auto job = makeJob({{3, killed}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto stopped = ofKind(scanned->report, IncidentKind::RankStopped);
    ASSERT_EQ(stopped.size(), 1u);
    EXPECT_EQ(stopped[0].rank, 3);
    EXPECT_EQ(stopped[0].onsetStep, 24);
    EXPECT_EQ(stopped[0].severity, Severity::Critical);
    EXPECT_EQ(scanned->ranks[3].end, RankEnd::Stopped);
    EXPECT_EQ(scanned->ranks[0].end, RankEnd::Finished);
}

TEST(RankScan, KilledRankAtTheSameStepIsStoppedByItsOwnState)
{
    // Under DDP the survivors cannot pass the dead rank's step: all logged the same steps, and
    // only rank.json tells them apart.
    RankPlan killed;
    killed.state = RankState::Running;
    auto job = makeJob({{1, killed}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto stopped = ofKind(scanned->report, IncidentKind::RankStopped);
    ASSERT_EQ(stopped.size(), 1u);
    EXPECT_EQ(stopped[0].rank, 1);
    EXPECT_EQ(stopped[0].onsetStep, kSteps - 1);
}

TEST(RankScan, LiveJobWhoseRanksAreAStepApartIsNotStopped)
{
    RankPlan running;
    running.state = RankState::Running;
    RankPlan behindByOne = running;
    behindByOne.steps = kSteps - 1;
    auto job = makeJob({{0, running}, {1, running}, {2, behindByOne}, {3, running}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    EXPECT_TRUE(ofKind(scanned->report, IncidentKind::RankStopped).empty());
    for (const RankSummary& rank : scanned->ranks)
        EXPECT_EQ(rank.end, RankEnd::Running);
}

TEST(RankScan, RankThatLeftNoRunIsReportedWithTheReason)
{
    RankMember missing;
    missing.rank = 3;
    missing.directory = "/job/rank_00003";
    missing.error = "/job/rank_00003: no such folder (the rank wrote nothing)";
    auto job = makeJob({}, {missing});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    const auto stopped = ofKind(scanned->report, IncidentKind::RankStopped);
    ASSERT_EQ(stopped.size(), 1u);
    EXPECT_EQ(stopped[0].rank, 3);
    EXPECT_NE(stopped[0].cause.find("no such folder"), std::string::npos);
    EXPECT_EQ(scanned->ranks[3].end, RankEnd::Unreadable);
    // The set shows a readable rank and refuses to show the missing one.
    EXPECT_FALSE(job->selectRank(3));
    EXPECT_TRUE(job->selectRank(2));
    EXPECT_EQ(job->info().directory, "/job/rank_00002");
}

TEST(RankScan, IncidentFoundOnEveryRankIsListedOnce)
{
    // The same per-rank finding on every rank (an all-reduced NaN burst) comes once, naming the others.
    RankPlan bad;
    bad.nanLocalStep = 15;
    auto job = makeJob({{0, bad}, {1, bad}, {2, bad}, {3, bad}});
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    std::map<std::pair<int, int64_t>, int> seen;
    for (const Incident& incident : scanned->report.incidents)
        ++seen[{int(incident.kind), incident.onsetStep}];
    for (const auto& [key, count] : seen)
        EXPECT_EQ(count, 1) << "kind " << key.first << " at step " << key.second;
}

TEST(RankScan, OtherRanksNonfiniteStepNamesTheRankItCameFrom)
{
    // Under DDP the poisoned rank's NaN is in every rank's all-reduced gradient at the same step.
    RankPlan poisoned;
    poisoned.nanLocalStep = 20;
    auto job = makeJob({{2, poisoned}});
    for (const RankMember& member : job->members()) {
        auto* run = static_cast<MemoryRunSource*>(member.run.get());
        auto loss = run->readSeries(rf::kScalars, "loss");
        auto local = run->readSeries(rf::kScalars, rf::kLocalGradNorm);
        std::vector<double> global(size_t(kSteps), 0.3);
        global[20] = kNaN;
        run->addSeriesTable(rf::kScalars, run->steps(rf::kScalars),
                            {{"loss", *loss}, {"grad_norm", global}, {rf::kLocalGradNorm, *local}});
    }
    auto scanned = scanRanks(*job, {}, {}, {});
    ASSERT_TRUE(scanned) << scanned.error();
    // The blow-up every rank saw at step 20 is listed once (issue 24), for the rank it came from,
    // and names the ranks it reached; it was listed for rank 0 and again for rank 2.
    std::map<int, int> atStep20; // kind -> incidents
    for (const Incident& incident : scanned->report.incidents)
        if (incident.onsetStep == 20 && incident.kind != IncidentKind::RankNonfinite) {
            ++atStep20[int(incident.kind)];
            EXPECT_EQ(incident.rank, 2) << "listed for the rank that went non-finite first";
            EXPECT_NE(incident.evidence.note.find("The same on rank(s) 0, 1, 3"), std::string::npos)
                << incident.evidence.note;
        }
    EXPECT_FALSE(atStep20.empty());
    for (const auto& [kind, count] : atStep20)
        EXPECT_EQ(count, 1) << "kind " << kind << " listed more than once";
}

// The window opens on the rank that went first from loadRankFirstNonfinite, which reads each
// rank in blocks and stops at its first non-finite row; the scan's rules read loadRankSeries. The
// two must name the same ranks, rows and steps: here with the first bad row in a later block than
// the first, one only in the local gradient norm, one rank without a local norm and one without a
// run.
TEST(RankScan, FirstNonfiniteRowsReadInBlocksAgreeWithTheWholeSeries)
{
    constexpr int64_t kLongSteps = 20000; // more than two read blocks
    std::vector<RankMember> members;
    const auto addRank = [&](int rank, std::optional<int64_t> nanLoss, std::optional<int64_t> nanLocal, bool withLocal) {
        RunInfo info;
        info.directory = "/job/" + rf::rankDirName(rank);
        auto run = std::make_shared<MemoryRunSource>(info);
        std::vector<int64_t> steps;
        std::vector<double> loss, local;
        for (int64_t s = 0; s < kLongSteps; ++s) {
            steps.push_back(10 + 2 * s); // steps are not rows
            loss.push_back(nanLoss && s >= *nanLoss ? kNaN : 1.0);
            local.push_back(nanLocal && s >= *nanLocal ? std::numeric_limits<double>::infinity() : 0.5);
        }
        std::map<std::string, std::vector<double>> columns{{"loss", loss}};
        if (withLocal)
            columns[rf::kLocalGradNorm] = local;
        run->addSeriesTable(rf::kScalars, steps, columns);
        RankMember member;
        member.rank = rank;
        member.directory = info.directory;
        member.run = run;
        members.push_back(std::move(member));
    };
    addRank(0, 12000, std::nullopt, true);  // the loss, in the second block
    addRank(1, std::nullopt, 9000, true);   // only the local norm, in the second block
    addRank(2, std::nullopt, std::nullopt, false); // healthy, no local norm
    RankMember missing;
    missing.rank = 3;
    missing.directory = "/job/rank_00003";
    missing.error = "/job/rank_00003: no such folder";
    members.push_back(missing);
    auto job = RankSet::create("/job", 4, std::move(members));
    ASSERT_TRUE(job) << job.error();

    const std::vector<scan::RankSeries> whole = scan::loadRankSeries(**job);
    const std::vector<scan::RankSeries> firstOnly = scan::loadRankFirstNonfinite(**job);
    ASSERT_EQ(whole.size(), 4u);
    ASSERT_EQ(firstOnly.size(), 4u);
    for (size_t i = 0; i < whole.size(); ++i) {
        SCOPED_TRACE("rank " + std::to_string(whole[i].rank));
        EXPECT_EQ(firstOnly[i].rank, whole[i].rank);
        EXPECT_EQ(firstOnly[i].readable, whole[i].readable);
        EXPECT_EQ(firstOnly[i].rows, whole[i].rows);
        EXPECT_EQ(firstOnly[i].firstNonfiniteRow, whole[i].firstNonfiniteRow);
        EXPECT_EQ(firstOnly[i].firstNonfiniteStep, whole[i].firstNonfiniteStep);
        EXPECT_EQ(firstOnly[i].error, whole[i].error);
        EXPECT_TRUE(firstOnly[i].loss.empty() && firstOnly[i].steps.empty()) << "nothing but the first bad row is kept";
    }
    EXPECT_EQ(whole[0].firstNonfiniteRow, std::optional<size_t>(12000));
    EXPECT_EQ(whole[0].firstNonfiniteStep, std::optional<int64_t>(10 + 2 * 12000));
    EXPECT_EQ(whole[1].firstNonfiniteRow, std::optional<size_t>(9000));
    EXPECT_FALSE(whole[2].firstNonfiniteRow);
    EXPECT_FALSE(whole[3].readable);

    const scan::NonfiniteLeaders fromWhole = scan::findNonfiniteLeaders(whole);
    const scan::NonfiniteLeaders fromFirst = scan::findNonfiniteLeaders(firstOnly);
    ASSERT_EQ(fromFirst.leaders.size(), 1u);
    ASSERT_EQ(fromWhole.leaders.size(), 1u);
    EXPECT_EQ(fromFirst.leaders[0]->rank, 1) << "the local norm went first, at row 9000";
    EXPECT_EQ(fromWhole.leaders[0]->rank, 1);
    EXPECT_EQ(fromFirst.step, 10 + 2 * 9000);
    EXPECT_EQ(fromFirst.othersStep, fromWhole.othersStep);
    EXPECT_EQ(scan::rankToExplain(**job, std::nullopt, nullptr), 1);
}

TEST(RankHeatmap, RowsAreRanksAndOnlyTheBadRankIsNonfinite)
{
    RankPlan poisoned;
    poisoned.nanLocalStep = 20;
    RankPlan killed;
    killed.state = RankState::Running;
    killed.steps = 10;
    auto job = makeJob({{1, poisoned}, {3, killed}});
    auto heatmap = buildRankHeatmap(*job, HeatmapQuantity::GradNormLog10, 40);
    ASSERT_TRUE(heatmap) << heatmap.error();
    ASSERT_EQ(heatmap->rows, (std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"}));
    ASSERT_EQ(heatmap->bins(), size_t(kSteps));
    for (size_t rank = 0; rank < 4; ++rank)
        for (size_t bin = 0; bin < heatmap->bins(); ++bin)
            EXPECT_EQ(heatmap->nonfinite[rank * heatmap->bins() + bin], rank == 1 && bin == 20 ? 1 : 0)
                << "rank " << rank << " bin " << bin;
    // The killed rank's steps after its last are not values and never the non-finite colour.
    EXPECT_TRUE(std::isfinite(heatmap->at(3, 30)));
    EXPECT_EQ(rankOfRowName(heatmap->rows[3]), 3);

    auto counts = buildRankHeatmap(*job, HeatmapQuantity::NonfiniteCount, 8); // 5 steps a bin
    ASSERT_TRUE(counts) << counts.error();
    EXPECT_EQ(counts->at(1, 4), 1.f);
    EXPECT_EQ(counts->at(0, 4), 0.f);
}

} // namespace
} // namespace nanscope
