// The first rank to go non-finite. Under DDP one rank's NaN reaches every rank through the
// gradient all-reduce within the same step, so the all-reduced series cannot tell who started it;
// each rank's own loss and local gradient norm (before the all-reduce) can. What that rank saw
// first is read from its own run: the health of its input batch and its local gradients.
#include "core/run/RunFormat.h"
#include "core/scan/Diagnosis.h"
#include "core/scan/RankScan.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

std::optional<int64_t> rowOfStep(const RunSource& run, const char* table, int64_t step)
{
    const std::vector<int64_t>& steps = run.steps(table);
    const auto it = std::lower_bound(steps.begin(), steps.end(), step);
    if (it == steps.end() || *it != step)
        return std::nullopt;
    return int64_t(it - steps.begin());
}

bool hasDataset(const RunSource& run, const char* table, const char* dataset)
{
    const TableInfo* info = run.table(table);
    return info && std::find(info->datasets.begin(), info->datasets.end(), dataset) != info->datasets.end();
}

// "x (3 NaN)" for each input that held NaN/Inf at `step`.
void readInputs(const RunSource& run, int64_t step, RankNonfiniteFacts& facts)
{
    const TableInfo* inputs = run.table(rf::kInputs);
    const auto row = inputs ? rowOfStep(run, rf::kInputs, step) : std::nullopt;
    if (!row || !hasDataset(run, rf::kInputs, rf::column::kNan) || !hasDataset(run, rf::kInputs, rf::column::kInf))
        return;
    auto nan = run.readRow(rf::kInputs, rf::column::kNan, *row);
    auto inf = run.readRow(rf::kInputs, rf::column::kInf, *row);
    if (!nan || !inf)
        return;
    facts.inputsLogged = true;
    for (size_t i = 0; i < inputs->names.size() && i < nan->size() && i < inf->size(); ++i) {
        std::string counts;
        if ((*nan)[i] > 0)
            counts = numberText((*nan)[i]) + " NaN";
        if ((*inf)[i] > 0)
            counts += (counts.empty() ? "" : ", ") + numberText((*inf)[i]) + " Inf";
        if (!counts.empty())
            facts.badInputs.push_back(inputs->names[i] + " (" + counts + ")");
    }
}

// The leader's own scan judged its batches (BadInputRule): a batch of extreme but finite values at
// `step` (a 1e30 sample) is quoted from there, so the two incidents of that rank and step agree.
void readExtremeInputs(const Result<ScanReport>& rankReport, int64_t step, RankNonfiniteFacts& facts)
{
    if (!rankReport)
        return;
    for (const Incident& incident : rankReport->incidents) {
        if (incident.kind != IncidentKind::BadInput)
            continue;
        for (const LayerOnset& row : incident.evidence.layerOnsets)
            if (row.onsetStep == step && !row.nonfinite) {
                facts.inputsLogged = true;
                // The incident's note describes its first bad batch.
                const bool described = incident.onsetStep == step && !incident.evidence.note.empty();
                const std::string entry = row.name + (described ? " (" + incident.evidence.note + ")" : std::string());
                if (std::find(facts.extremeInputs.begin(), facts.extremeInputs.end(), entry) == facts.extremeInputs.end())
                    facts.extremeInputs.push_back(entry);
            }
    }
}

void readLocalGradients(const RunSource& run, int64_t step, RankNonfiniteFacts& facts)
{
    const TableInfo* layers = run.table(rf::kLayers);
    const auto row = layers ? rowOfStep(run, rf::kLayers, step) : std::nullopt;
    if (!row || !hasDataset(run, rf::kLayers, rf::kLocalGradNorm))
        return;
    auto norms = run.readRow(rf::kLayers, rf::kLocalGradNorm, *row);
    if (!norms)
        return;
    facts.localGradientsLogged = true;
    for (size_t i = 0; i < layers->names.size() && i < norms->size(); ++i)
        if (!std::isfinite((*norms)[i]))
            facts.badLayers.push_back(layers->names[i]);
}

} // namespace

NonfiniteLeaders findNonfiniteLeaders(const std::vector<RankSeries>& series)
{
    NonfiniteLeaders found;
    std::optional<int64_t> first;
    size_t withData = 0;
    for (const RankSeries& rank : series) {
        if (!rank.readable || rank.rows == 0)
            continue;
        ++withData;
        if (rank.firstNonfiniteStep)
            first = first ? std::min(*first, *rank.firstNonfiniteStep) : *rank.firstNonfiniteStep;
    }
    if (!first || withData < 2)
        return found;
    found.step = *first;
    for (const RankSeries& rank : series) {
        if (!rank.readable || !rank.firstNonfiniteStep)
            continue;
        const int64_t step = *rank.firstNonfiniteStep;
        if (step == *first)
            found.leaders.push_back(&rank);
        else
            found.othersStep = found.othersStep ? std::min(*found.othersStep, step) : step;
    }
    if (found.leaders.size() == withData) {
        found.everyRankAtOnce = true;
        found.leaders.clear();
    }
    return found;
}

Status detectFirstNonfiniteRank(RankScanContext& context)
{
    const NonfiniteLeaders found = findNonfiniteLeaders(context.series);
    if (found.everyRankAtOnce) {
        context.notes.push_back("every rank went non-finite at step " + std::to_string(found.step) +
                                " at once: no one rank led (a cause they share: the weights, the learning rate)");
        return Status::success();
    }
    if (found.leaders.empty())
        return Status::success();
    const std::vector<const RankSeries*>& leaders = found.leaders;
    const std::optional<int64_t> othersStep = found.othersStep;
    const std::optional<int64_t> first = found.step;
    const RankSeries& leader = *leaders.front();
    const RunSource& run = *leader.member->run;
    const size_t row = *leader.firstNonfiniteRow;
    RankNonfiniteFacts facts;
    facts.rank = leader.rank;
    facts.step = *first;
    facts.worldSize = context.ranks.worldSize();
    facts.othersStep = othersStep;
    for (size_t i = 1; i < leaders.size(); ++i)
        facts.sameStepRanks.push_back(leaders[i]->rank);
    facts.lossNonfinite = !std::isfinite(leader.loss[row]);
    readInputs(run, facts.step, facts);
    const size_t leaderIndex = size_t(&leader - context.series.data());
    if (leaderIndex < context.rankReports.size())
        readExtremeInputs(context.rankReports[leaderIndex], facts.step, facts);
    readLocalGradients(run, facts.step, facts);
    facts.batchNote = savedBatchNote(run.info(), facts.step);

    Incident incident;
    incident.kind = IncidentKind::RankNonfinite;
    incident.severity = Severity::Critical;
    incident.rank = leader.rank;
    incident.onsetStep = facts.step;
    incident.nonfiniteStep = facts.step;
    incident.layers = facts.badLayers;
    incident.evidence.series = facts.lossNonfinite ? rf::scalarSeries(rf::scalar::kLoss) : rf::scalarSeries(rf::kLocalGradNorm);
    incident.evidence.windowBeginStep = facts.step;
    incident.evidence.windowEndStep = othersStep.value_or(facts.step);
    incident.evidence.count = int64_t(leaders.size());
    std::string note = "rank " + std::to_string(leader.rank) + " at step " + std::to_string(facts.step) + ": inputs ";
    std::vector<std::string> unusual = facts.badInputs;
    unusual.insert(unusual.end(), facts.extremeInputs.begin(), facts.extremeInputs.end());
    note += facts.inputsLogged ? (unusual.empty() ? "finite" : joinNames(unusual, 4)) : "not logged";
    note += "; local gradient ";
    note += facts.localGradientsLogged
                ? (facts.badLayers.empty() ? "finite in every parameter"
                                           : "non-finite in " + joinNames(facts.badLayers, 3))
                : "not logged";
    incident.evidence.note = note;
    applyDiagnosis(incident, diagnoseRankNonfinite(facts));
    context.incidents.push_back(std::move(incident));
    context.firstNonfiniteRank = leader.rank;
    return Status::success();
}

} // namespace nanscope::scan
