// Non-finite values in the loss or gradient norm, and blow-ups. Non-finite rows close in steps
// form bursts; a burst the training recovered from is a NonfiniteLoss incident, the first one it
// did not recover from is the failure of a blow-up. Without NaN, a rise of blow-up size that does
// not come back (or a finite explosion that left the loss destroyed) is a blow-up too.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/scan/BlowupFailure.h"
#include "core/scan/BlowupOnset.h"
#include "core/scan/BlowupOrigin.h"
#include "core/scan/BlowupStart.h"
#include "core/scan/Precursor.h"
#include "core/scan/Onset.h"
#include "core/scan/Recovery.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nanscope::scan {

namespace {

// The log reader found that the framework logged 0.0 for this step's non-finite loss.
// How many times `s` rose from the level around `fromRow` (median of five rows) to the top of the
// last nine finite rows before `toRow` (their largest: a gradient norm that swings between its clip
// and x1e4 from step to step has climbed, whatever its median says); absent without finite rows.
std::optional<double> riseBetween(const LogSeries& s, size_t fromRow, size_t toRow)
{
    std::vector<double> around;
    double top = -std::numeric_limits<double>::infinity();
    for (size_t r = fromRow > 2 ? fromRow - 2 : 0; r <= fromRow + 2 && r < toRow; ++r)
        if (s.finite[r])
            around.push_back(s.log[r]);
    size_t seen = 0;
    for (size_t r = toRow; r-- > fromRow && seen < 9;)
        if (s.finite[r]) {
            top = std::max(top, s.log[r]);
            ++seen;
        }
    if (around.empty() || seen == 0)
        return std::nullopt;
    return std::pow(10.0, top - medianOf(around));
}

bool loggedAsZero(const RunInfo& info, int64_t step)
{
    const auto found = info.attributes.find(runformat::kLossLoggedAsZeroAttribute);
    if (found == info.attributes.end())
        return false;
    const std::string& steps = found->second;
    size_t begin = 0;
    while (begin <= steps.size()) {
        const size_t end = std::min(steps.find(',', begin), steps.size());
        if (steps.compare(begin, end - begin, std::to_string(step)) == 0)
            return true;
        begin = end + 1;
    }
    return false;
}

namespace rf = runformat;

// The growth's evidence: the series it is measured on, its baseline, peak, jump and slope (the
// precursor's own, when one began it), where the NaN was born and the gradient norm's lead.
void measureGrowth(const ScanContext& context, const BlowupStart& b, const Failure& failure, Incident& incident)
{
    const RunScalars& scalars = context.scalars;
    const std::vector<int64_t>& steps = scalars.steps;
    auto& evidence = incident.evidence;
    evidence.series = b.measuredOnLoss ? rf::scalarSeries(rf::scalar::kLoss) : scalars.primaryName;
    evidence.windowBeginStep = b.onsetStep;
    evidence.note = failure.note;
    if (std::isfinite(b.baseline))
        evidence.baseline = std::pow(10.0, b.baseline);
    // Not a sustained one-step jump from the baseline: a gradual blow-up (steady exponential
    // growth, or an escalation of spikes that come and go on the way up).
    incident.pattern = b.sudden ? BlowupPattern::Sudden : BlowupPattern::Gradual;

    double peak = -kInf;
    double jumpPeak = -kInf;
    std::vector<double> x, y;
    const LogSeries& measured = b.measuredOnLoss ? scalars.loss : scalars.primary();
    for (size_t r = b.onsetRow; r <= b.lastRow && r < measured.size(); ++r) {
        if (!measured.finite[r])
            continue;
        peak = std::max(peak, measured.log[r]);
        if (steps[r] - b.onsetStep <= context.config.jumpSteps)
            jumpPeak = std::max(jumpPeak, measured.log[r]);
        x.push_back(double(steps[r]));
        y.push_back(measured.log[r]);
    }
    if (std::isfinite(peak))
        evidence.peak = std::pow(10.0, peak);
    if (std::isfinite(b.baseline)) {
        const double top = b.sudden ? jumpPeak : peak;
        if (std::isfinite(top))
            evidence.jumpRatio = std::pow(10.0, top - b.baseline);
    }
    // The growth before the failure; a lone point (sudden jump straight to NaN) has no slope.
    if (x.size() >= 2)
        evidence.growthDecadesPerStep = theilSenSlope(x, y);
    else if (x.size() == 1 && std::isfinite(b.baseline) && steps[b.lastRow] > b.onsetStep)
        evidence.growthDecadesPerStep = (y[0] - b.baseline) / double(steps[b.lastRow] - b.onsetStep);

    // Where a learning-rate climb began it, the growth is the primary series' from there.
    if (const auto& precursor = b.lrClimb ? std::nullopt : b.precursor) {
        evidence.series = precursor->source + "/" + precursor->name;
        evidence.baseline = precursor->baseline;
        evidence.peak = precursor->peak;
        evidence.jumpRatio = std::pow(10.0, precursor->riseDecades);
        evidence.growthDecadesPerStep = precursor->decadesPerStep;
        if (precursor->source == "activations") {
            evidence.headroomOf = precursor->name;
            evidence.float16HeadroomDecades = headroomDecades(precursor->peak, kFloat16Max);
            evidence.bfloat16HeadroomDecades = headroomDecades(precursor->peak, kBFloat16Max);
        }
    }
    evidence.nonfiniteOrigin = b.origin;
    evidence.gradLeadSteps = gradientLead(context, b.windowBegin, failure.row);
}

// The layers to blame, first bad first, and the first non-finite step: the first NaN/Inf in the
// loss, the gradient norm or any layer after the onset.
Status blameBlowupLayers(const ScanContext& context, const BlowupStart& b, const Failure& failure, Incident& incident)
{
    const ScanConfig& config = context.config;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const int64_t failureStep = steps[failure.row];
    const int64_t onsetStep = b.onsetStep;
    const OriginJudgement& born = b.born;
    std::optional<int64_t> nonfiniteStep;
    for (size_t r = b.onsetRow; r < steps.size(); ++r)
        if (context.scalars.rowNonfinite(r)) {
            nonfiniteStep = steps[r];
            break;
        }
    const int64_t windowEnd = failure.nonfinite ? failureStep + config.jumpSteps : context.report.lastStep;
    // Layers are judged over a shorter look-back than the total: their own baseline just
    // before the onset is what matters, and a thousand layers times the full window is slow.
    const int64_t layerWindowBegin = std::max(std::min(steps[b.windowBegin], onsetStep - 1),
                                              onsetStep - std::max<int64_t>(4 * config.baselineRows, 100));
    auto blame = blameLayers(context.inputs, context.order, config, layerWindowBegin, onsetStep, windowEnd);
    if (!blame)
        return Error{blame.error()};
    for (const auto& [onset, position] : *blame) {
        if (onset.nonfiniteStep && (!nonfiniteStep || *onset.nonfiniteStep < *nonfiniteStep) &&
            *onset.nonfiniteStep >= onsetStep)
            nonfiniteStep = onset.nonfiniteStep;
    }
    if (born.everyParameter && !b.precursor) {
        // Layers bad only from the failing row on were all bad at once: naming the first in forward
        // order would name a layer that may have been fine. Only layers that rose earlier stay.
        blame->erase(std::remove_if(blame->begin(), blame->end(),
                                    [&](const RankedOnset& o) {
                                        return o.first.onsetStep >= failureStep ||
                                               (o.first.nonfinite && o.first.nonfiniteStep &&
                                                *o.first.nonfiniteStep >= failureStep);
                                    }),
                     blame->end());
    }
    if (b.origin == NonfiniteOrigin::Parameters && !born.everyParameter && !b.nanInput && !b.precursor && b.sudden) {
        // A sudden NaN with some parameters non-finite, the others finite: the update wrote NaN into
        // these first (a gradual blow-up keeps the layers that rose first).
        std::vector<RankedOnset> weights;
        for (const auto& name : born.nanParameters)
            weights.push_back({LayerOnset{name, "layers/param_norm", failureStep, kInf, true, failureStep},
                               context.order.parameter(name)});
        fillLayers(incident, weights, config.maxLayersListed);
        nonfiniteStep = failureStep;
    }
    if (const auto& precursor = b.precursor) {
        // The column that grew first is where the blow-up began.
        const bool activation = precursor->source == "activations";
        const int position = activation ? context.order.module(precursor->name) : context.order.parameter(precursor->name);
        fillLayers(incident,
                   {{LayerOnset{precursor->name, precursor->source,
                                precursor->onsetStep, precursor->riseDecades, false, std::nullopt},
                     position}},
                   config.maxLayersListed);
    }
    fillLayers(incident, *blame, config.maxLayersListed);
    incident.nonfiniteStep = nonfiniteStep;
    incident.evidence.windowEndStep = nonfiniteStep ? *nonfiniteStep : steps[b.lastRow];
    return Status::success();
}

// What the diagnosis is written from (Diagnosis.h), out of the start, the evidence and the layers.
BlowupFacts blowupFacts(const ScanContext& context, const BlowupStart& b, const Failure& failure,
                        const Incident& incident)
{
    const RunScalars& scalars = context.scalars;
    const std::vector<int64_t>& steps = scalars.steps;
    const OriginJudgement& born = b.born;
    const auto& evidence = incident.evidence;
    BlowupFacts facts;
    facts.series = scalars.gradNorm.empty() ? "loss" : "gradient norm";
    facts.sudden = b.sudden;
    facts.onsetStep = b.onsetStep;
    facts.nonfiniteStep = incident.nonfiniteStep;
    facts.windowEndStep = evidence.windowEndStep;
    facts.jumpRatio = evidence.jumpRatio;
    facts.growthDecadesPerStep = evidence.growthDecadesPerStep;
    facts.baseline = evidence.baseline;
    facts.firstLayer = incident.layers.empty() ? std::string() : incident.layers.front();
    facts.bornInWeights = b.bornInWeights;
    if (b.lossClimb) {
        facts.lossClimb = std::pow(10.0, b.lossClimb->rise);
        if (b.paramClimb)
            facts.paramNormClimb = std::pow(10.0, b.paramClimb->rise);
        facts.primaryRise = b.primaryRise;
    }
    facts.stableBefore = born.stableBefore;
    facts.firstLayerUndetermined = born.everyParameter && !b.precursor && incident.layers.empty();
    facts.nanParameters = born.nanParameters;
    if (b.bornInWeights) {
        facts.updateStep = born.updateStep;
        facts.updateStepExact = born.updateStepExact;
        facts.zeroGradientParameters = born.zeroGradientParameters;
    }
    facts.previousLoggedStep =
        failure.row > 0 ? std::optional<int64_t>(steps[failure.row - 1]) : std::nullopt;
    if (const auto& precursor = b.precursor) {
        facts.precursor = precursor->name;
        facts.precursorSource = precursor->source;
        facts.precursorRiseDecades = precursor->riseDecades;
        facts.precursorBaseline = precursor->baseline;
        facts.precursorPeak = precursor->peak;
        if (precursor->nearLimit && failure.nonfinite) {
            facts.precursorLimit = precursor->nearLimit->value;
            facts.precursorLimitText = precursor->nearLimit->what;
        }
        facts.float16Overflow = precursor->source == "activations" && nearFloat16Limit(precursor->peak);
        facts.precursorExpScaleDecades = precursor->expScaleDecades;
        facts.precursorRoutedExperts = precursor->routedExperts;
        facts.precursorHeldFromStep = precursor->heldFromStep;
        facts.precursorOnsetStep = precursor->onsetStep;
        facts.primaryRiseSincePrecursor =
            riseBetween(scalars.primary(), rowAtOrAfter(steps, precursor->onsetStep), failure.row);
    }
    if (const Incident* input = context.badInputNear(b.onsetStep, 1, 0); input && !b.bornInWeights)
        facts.input = BlamedInput{input->onsetStep, input->severity == Severity::Critical, input->evidence.note,
                                  context.batchNote(input->onsetStep)};
    facts.nanInFirstSteps = b.onsetRow <= 2 && incident.nonfiniteStep &&
                            *incident.nonfiniteStep <= context.report.firstStep + 2;
    facts.firstLoggedStep = context.report.firstStep;
    facts.learningRateRise = scalars.learningRateRise(
        std::max(b.windowBegin, b.onsetRow > 50 ? b.onsetRow - 50 : size_t(0)), b.lastRow);
    facts.constantLearningRate = scalars.constantLearningRate(b.onsetRow, b.lastRow);
    if (b.lrClimb) {
        facts.learningRateClimb = std::pow(10.0, b.lrClimb->rise);
        facts.learningRateRise.reset(); // the climb says it, from where it began
    }
    facts.fp16 = context.inputs.fp16();
    facts.batchNote = context.batchNote(b.onsetStep);
    return facts;
}

Status reportBlowup(ScanContext& context, const Failure& failure)
{
    auto started = judgeBlowupStart(context, failure);
    if (!started)
        return Error{started.error()};
    const BlowupStart& b = *started;
    // Decided: the vanishing rule's stream, running beside the rules, stops before it at once
    // (what comes below reads the layers' windows, and the stream would read on past the onset).
    context.blowupOnsetRow = b.onsetRow;
    context.blowupOnsetStep = b.onsetStep;
    context.explosionStep = b.precursor ? std::max(b.onsetStep, context.scalars.steps[std::min(b.rise.onsetRow, failure.row)])
                                        : b.onsetStep;
    limitVanishingStream(context);

    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.severity = failure.severity;
    incident.onsetStep = b.onsetStep;
    measureGrowth(context, b, failure, incident);
    if (Status blamed = blameBlowupLayers(context, b, failure, incident); !blamed)
        return blamed;
    const BlowupFacts facts = blowupFacts(context, b, failure, incident);
    // Non-finite from the first logged value: there is no growth to see, so no pattern to name.
    if (facts.nanInFirstSteps)
        incident.pattern.reset();
    applyDiagnosis(incident, diagnoseBlowup(facts));
    // The weights went first: the normalisation statistics a forward pass through them poisoned are
    // its consequence, and point to it (the root is the incident a user fixes).
    const int64_t failureStep = context.scalars.steps[failure.row];
    if (b.bornInWeights)
        for (Incident& other : context.report.incidents)
            if (other.kind == IncidentKind::BnCorruption && other.onsetStep >= failureStep &&
                other.onsetStep <= failureStep + 1) {
                other.cause += " " + consequenceOfNanWeightsNote(failureStep);
                if (other.severity == Severity::Critical)
                    other.severity = Severity::Warning;
            }
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

// A burst the training recovered from: which layer produced it and why.
Status reportNonfiniteBurst(ScanContext& context, const Burst& burst)
{
    const RunScalars& scalars = context.scalars;
    const ScanInputs& inputs = context.inputs;
    const ForwardOrder& order = context.order;
    context.burstRows.push_back({burst.firstRow, burst.lastRow});
    const int64_t first = scalars.steps[burst.firstRow];
    const int64_t last = scalars.steps[burst.lastRow];
    Incident incident;
    incident.kind = IncidentKind::NonfiniteLoss;
    incident.severity = Severity::Warning;
    incident.onsetStep = first;
    // The burst starts at its first non-finite step: the incident's "non-finite at", which the
    // window's and the report's tables show for every kind.
    incident.nonfiniteStep = first;
    incident.evidence.series = scalars.loss.finite[burst.firstRow] ? scalars.primaryName : rf::scalarSeries(rf::scalar::kLoss);
    incident.evidence.windowBeginStep = first;
    incident.evidence.windowEndStep = last;
    incident.evidence.count = burst.count;
    NonfiniteBurstFacts facts;
    facts.firstStep = first;
    facts.loggedAsZero = loggedAsZero(context.inputs.info(), first);
    facts.lastStep = last;
    facts.count = burst.count;
    facts.lossFinite = true;
    for (size_t r = burst.firstRow; r <= burst.lastRow; ++r) {
        facts.skippedByTraining = facts.skippedByTraining || scalars.skippedAt(r);
        facts.lossFinite = facts.lossFinite && scalars.loss.finite[r];
    }
    // How far the (finite) loss jumped over its recent median: one extreme batch, not an overflow.
    if (facts.lossFinite) {
        std::vector<double> before;
        for (size_t r = burst.firstRow; r-- > 0 && before.size() < 20;)
            if (scalars.loss.finite[r] && scalars.loss.raw[r] > 0)
                before.push_back(scalars.loss.raw[r]);
        const double median = before.size() >= 3 ? medianOf(before) : kNaN;
        for (size_t r = burst.firstRow; r <= burst.lastRow && median > 0; ++r)
            facts.lossJump = std::max(facts.lossJump, scalars.loss.raw[r] / median);
    }
    // The gradient norm alone non-finite, the loss finite and ordinary, a step or three: a
    // mixed-precision step the loss scaler skipped. Worth seeing on the timeline, not a warning.
    if (facts.lossFinite && burst.count <= 3 && facts.lossJump < kExtremeBatchLossJump)
        incident.severity = Severity::Info;
    // The kind says what was non-finite: a gradient norm beside a finite loss is not a NaN loss.
    if (facts.lossFinite)
        incident.kind = IncidentKind::NonfiniteGradient;

    // Which layer produced it: the first module (in forward order) whose output went
    // non-finite at the burst's first logged activation row, then the gradients.
    std::vector<RankedOnset> onsets;
    if (const TableInfo* activations = inputs.table(rf::kActivations)) {
        auto columns = inputs.readWindow(rf::kActivations, rf::column::kMax, rf::column::kNan, rf::column::kInf, first, last);
        if (!columns)
            return Error{columns.error()};
        int64_t earliest = std::numeric_limits<int64_t>::max();
        for (size_t c = 0; c < columns->size(); ++c) {
            const LayerColumn& column = (*columns)[c];
            for (size_t r = 0; r < column.series.size(); ++r)
                if (!column.series.finite[r]) {
                    const int64_t step = column.series.steps[r];
                    onsets.push_back(
                        {LayerOnset{column.name, "activations", step, kInf, true, step}, order.module(column.name)});
                    if (step < earliest ||
                        (step == earliest && order.module(column.name) < order.module(facts.origin))) {
                        earliest = step;
                        facts.origin = column.name;
                        facts.originKind = c < activations->kinds.size() ? activations->kinds[c] : "";
                        // Its input: the previous module's output, or the batch for the first one.
                        facts.originInputFinite =
                            c == 0 ? !context.badInputNear(earliest, 0, 0)
                                   : (r < (*columns)[c - 1].series.size() && (*columns)[c - 1].series.finite[r]);
                    }
                    break;
                }
        }
    }
    if (inputs.hasDataset(rf::kLayers, rf::column::kGradNorm)) {
        auto columns = inputs.readWindow(rf::kLayers, rf::column::kGradNorm, rf::column::kGradNonfinite, nullptr, first, last);
        if (!columns)
            return Error{columns.error()};
        for (const auto& column : *columns)
            for (size_t r = 0; r < column.series.size(); ++r)
                if (!column.series.finite[r]) {
                    facts.gradientsNonfinite = true;
                    onsets.push_back({LayerOnset{column.name, column.source, column.series.steps[r], kInf, true,
                                                 column.series.steps[r]},
                                      order.parameter(column.name)});
                    break;
                }
    }
    orderLayerOnsets(onsets, context.config.tieDecades);
    fillLayers(incident, onsets, context.config.maxLayersListed);
    if (facts.origin.empty() && inputs.table(rf::kActivations)) {
        const auto& logged = inputs.steps(rf::kActivations);
        facts.activationsFiniteAtFirstStep = std::binary_search(logged.begin(), logged.end(), first);
    }
    facts.logEndsAtBurst = burst.lastRow + 1 >= scalars.steps.size();

    const Incident* input = context.badInputNear(first, 0, last - first);
    facts.nanInput = input && input->severity == Severity::Critical;
    facts.inFirstBatch = burst.firstRow <= 1;
    facts.fp16 = inputs.fp16();
    facts.batchNote = context.batchNote(first);
    applyDiagnosis(incident, diagnoseNonfiniteBurst(facts));
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace

Status detectNonfiniteAndBlowup(ScanContext& context)
{
    const size_t rows = context.scalars.steps.size();
    size_t failureRow = rows;
    for (const Burst& burst : nonfiniteBursts(context)) {
        if (recoveredAfter(context, burst) && !explodedBefore(context, burst)) {
            if (Status s = reportNonfiniteBurst(context, burst); !s)
                return s;
            continue;
        }
        failureRow = burst.firstRow;
        break;
    }
    if (failureRow < rows) {
        Failure failure;
        failure.row = failureRow;
        failure.nonfinite = true;
        return reportBlowup(context, failure);
    }
    if (auto destroyed = destroyedByExplosion(context))
        return reportBlowup(context, *destroyed);
    if (auto rise = finiteRise(context))
        return reportBlowup(context, *rise);
    return Status::success();
}

} // namespace nanscope::scan
