// The reporting half of the vanishing rule (VanishingRule.cpp streams /layers/grad_norm and finds
// the stretches): which stretches are findings, and the incident each group of layers makes.
#include "core/scan/VanishedLayers.h"

#include "core/scan/Diagnosis.h"
#include "core/scan/ExpertLoad.h"
#include "core/scan/ScanContext.h"

#include "core/NumberText.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace nanscope::scan::vanishingrule {

namespace rf = runformat;

namespace {

// Rows past the window looked at for a layer that trained after it: two cells' worth.
constexpr int64_t kRowsPastWindow = 64;

// Per layer, whether its gradient was finite and non-zero on a row just past the first `rows` (up
// to kRowsPastWindow of them); all false when the window is the whole table or the rows cannot be
// read (then nothing is claimed).
std::vector<bool> trainedAfterWindow(const ScanInputs& inputs, int64_t rows, int64_t available)
{
    const size_t width = inputs.table(rf::kLayers)->names.size();
    std::vector<bool> trained(width, false);
    const int64_t count = std::min(available - rows, kRowsPastWindow);
    if (count <= 0)
        return trained;
    auto block = inputs.readBlock(rf::kLayers, rf::column::kGradNorm, rows, count);
    if (!block || block->size() < size_t(count) * width)
        return trained;
    for (size_t k = 0; k < size_t(count) * width; ++k)
        if (std::isfinite((*block)[k]) && (*block)[k] > 0)
            trained[k % width] = true;
    return trained;
}

enum class GroupKind { Frozen, Vanished, StarvedExperts };

// One incident for a group of layers: frozen (never had a gradient, Info), vanished (Warning), or
// experts the router starved (ExpertCollapse, Warning).
void reportGroup(ScanContext& context, std::vector<VanishedRun> group, GroupKind kind)
{
    const bool frozen = kind == GroupKind::Frozen;
    if (group.empty())
        return;
    const std::vector<std::string>& names = context.inputs.table(rf::kLayers)->names;
    const ForwardOrder& order = context.order;
    std::sort(group.begin(), group.end(), [&](const VanishedRun& x, const VanishedRun& y) {
        if (x.begin != y.begin)
            return x.begin < y.begin;
        return order.parameter(names[x.layer]) < order.parameter(names[y.layer]);
    });
    Incident incident;
    incident.kind = IncidentKind::Vanishing;
    incident.severity = frozen ? Severity::Info : Severity::Warning;
    incident.onsetStep = group.front().begin;
    auto& e = incident.evidence;
    e.series = "layers/grad_norm";
    e.windowBeginStep = group.front().begin;
    e.windowEndStep = group.front().end;
    e.count = int64_t(group.size());
    for (const auto& v : group) {
        e.windowEndStep = std::max(e.windowEndStep, v.end);
        if (incident.layers.size() < size_t(context.config.maxLayersListed)) {
            incident.layers.push_back(names[v.layer]);
            e.layerOnsets.push_back(
                {names[v.layer], "layers/grad_norm", v.begin, -context.config.vanishingDecades, false, std::nullopt});
        }
    }
    if (frozen) {
        applyDiagnosis(incident, diagnoseFrozen(incident.layers, group.size()));
    } else if (kind == GroupKind::StarvedExperts) {
        incident.kind = IncidentKind::ExpertCollapse;
        std::vector<std::string> experts;
        for (const auto& v : group)
            if (auto expert = expertOf(names[v.layer])) {
                const std::string name = expert->group + "." + expert->index;
                if (std::find(experts.begin(), experts.end(), name) == experts.end())
                    experts.push_back(name);
            }
        applyDiagnosis(incident, diagnoseExpertCollapse(VanishingFacts{incident.layers, group.size(), group.front().zeroFraction,
                                                                       context.config.vanishingDecades,
                                                                       incident.onsetStep, e.windowEndStep},
                                                        experts));
        e.note = std::to_string(experts.size()) + " expert(s) starved";
    } else {
        const double zeroFraction = group.front().zeroFraction;
        applyDiagnosis(incident, diagnoseVanishing(VanishingFacts{incident.layers, group.size(), zeroFraction,
                                                                  context.config.vanishingDecades, incident.onsetStep,
                                                                  e.windowEndStep}));
        e.note = "zero on " + numberText(100 * zeroFraction, 3) + "% of the rows";
    }
    context.report.incidents.push_back(std::move(incident));
}

} // namespace

Status reportVanished(ScanContext& context, const std::vector<VanishedRun>& vanished, int64_t rows, int64_t available)
{
    const std::vector<int64_t>& steps = context.inputs.steps(rf::kLayers);
    // Layers that never had a gradient are frozen or unused (info); the others vanished.
    const int64_t firstStep = steps.front();
    const int64_t lastStep = steps[size_t(rows - 1)];
    // Layers with an exactly-zero gradient from the first step that trained later were outside the
    // loss until then (a head that joins after a warm-up, a stage unfrozen): not vanishing.
    const auto fromStart = [&](const VanishedRun& v) { return v.begin == firstStep && v.zeroFraction > 0.5; };
    const auto wholeWindow = [&](const VanishedRun& v) { return v.begin == firstStep && v.end == lastStep; };
    // The window may end at a blow-up: a layer zero up to there may have trained right after it
    // (the rows past it are read only for such a layer).
    const bool anyZeroThroughout = std::any_of(vanished.begin(), vanished.end(),
                                               [&](const VanishedRun& v) { return fromStart(v) && wholeWindow(v); });
    const std::vector<bool> trainedAfter =
        anyZeroThroughout ? trainedAfterWindow(context.inputs, rows, available) : std::vector<bool>{};
    std::vector<VanishedRun> frozen, lost;
    size_t joinedLater = 0;
    for (const auto& v : vanished) {
        if (fromStart(v) && (!wholeWindow(v) || (v.layer < trainedAfter.size() && trainedAfter[v.layer])))
            ++joinedLater;
        else
            (wholeWindow(v) ? frozen : lost).push_back(v);
    }
    if (joinedLater > 0)
        context.report.notes.push_back(std::to_string(joinedLater) +
                                       " parameter(s) had no gradient from the first step, then trained: outside the "
                                       "loss until then (a staged training), not reported as vanishing");
    const std::vector<std::string>& names = context.inputs.table(rf::kLayers)->names;
    // Frozen base weights beside trained adapters are how a LoRA run trains: not a finding.
    std::vector<VanishedRun> frozenOther;
    size_t frozenBase = 0;
    const bool adapters = std::any_of(names.begin(), names.end(), adapterParameter);
    for (const auto& v : frozen) {
        if (adapters && !adapterParameter(names[v.layer]))
            ++frozenBase;
        else
            frozenOther.push_back(v);
    }
    if (frozenBase > 0)
        context.report.notes.push_back(std::to_string(frozenBase) +
                                       " base parameter(s) have no gradient beside trained adapters: frozen, as "
                                       "an adapter (LoRA) run trains them, not reported");
    reportGroup(context, frozenOther, GroupKind::Frozen);
    // Experts that lost their gradient while a sibling expert trains: the router starved them.
    std::vector<VanishedSpan> spans;
    for (const auto& v : vanished)
        spans.push_back({names[v.layer], v.begin, v.end});
    const std::vector<bool> starvedSpan = starvedExperts(spans, names);
    std::vector<VanishedRun> starved, rest;
    for (const auto& v : lost) {
        bool isStarved = false;
        for (size_t i = 0; i < vanished.size(); ++i)
            if (vanished[i].layer == v.layer && vanished[i].begin == v.begin && starvedSpan[i])
                isStarved = true;
        (isStarved ? starved : rest).push_back(v);
    }
    lost = std::move(rest);
    reportGroup(context, starved, GroupKind::StarvedExperts);
    // Layers that vanish together form one incident; a later, separate group is another.
    std::sort(lost.begin(), lost.end(), [](const VanishedRun& x, const VanishedRun& y) { return x.begin < y.begin; });
    std::vector<VanishedRun> group;
    int64_t groupEnd = std::numeric_limits<int64_t>::min();
    for (const auto& v : lost) {
        if (!group.empty() && v.begin > groupEnd) {
            reportGroup(context, group, GroupKind::Vanished);
            group.clear();
        }
        group.push_back(v);
        groupEnd = std::max(groupEnd, v.end);
    }
    reportGroup(context, group, GroupKind::Vanished);
    return Status::success();
}

} // namespace nanscope::scan::vanishingrule
