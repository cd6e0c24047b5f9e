// Non-finite values in the loss or gradient norm, and blow-ups. Non-finite rows close in steps
// form bursts; a burst the training recovered from is a NonfiniteLoss incident, the first one it
// did not recover from is the failure of a blow-up. Without NaN, a rise of blow-up size that does
// not come back (or a finite explosion that left the loss destroyed) is a blow-up too.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"
#include "core/scan/BlowupFailure.h"
#include "core/scan/BlowupOnset.h"
#include "core/scan/BlowupOrigin.h"
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

// A module's output or a parameter's norm that rose this many decades (x100) steadily up to the
// failure is where the blow-up began, even when the gradient norm shows nothing yet.
constexpr double kPrecursorDecades = 2.0;

// The earliest precursor (core/scan/Precursor.h), when it and not the primary series says where the
// blow-up began: it began more than a few steps before the primary's onset, or, a climb of orders
// of magnitude, the primary showed no blow-up of its own (within a jump of its baseline where the
// growth began and right up to the failure: attention logits growing into the float16 limit).
// Looked for further back than the primary's baseline: a temperature or a router's logits can
// climb for thousands of steps.
Result<std::optional<Precursor>> leadingPrecursor(const ScanContext& context, size_t failureRow, size_t onsetRow,
                                                  const Rise& rise)
{
    const ScanConfig& config = context.config;
    const std::vector<int64_t>& steps = context.scalars.steps;
    const LogSeries& s = context.scalars.primary();
    const int64_t failureStep = steps[failureRow];
    PrecursorSearch search;
    // Not past an earlier incident's burst: it is not the baseline.
    const int64_t afterBurst = context.burstRows.empty()
                                   ? steps.front()
                                   : steps[std::min(steps.size() - 1, context.burstRows.back().second + 1)];
    search.windowBeginStep =
        std::max(failureStep - std::max(config.precursorLookbackSteps, config.lookbackSteps), afterBurst);
    search.failureStep = failureStep;
    search.minDecades = config.precursorDecades;
    search.strongDecades = kPrecursorDecades;
    search.minLeadSteps = std::max<int64_t>(4 * config.jumpSteps, 20);
    auto found = findPrecursor(context.inputs, config, search);
    if (!found || !*found)
        return found;
    const Precursor& p = **found;
    const int64_t margin = std::max<int64_t>(2 * config.jumpSteps, 5);
    if (p.onsetStep < steps[onsetRow] - margin)
        return found;
    const size_t growthRow = rowAtOrAfter(steps, p.onsetStep);
    std::vector<double> around, last;
    for (size_t r = growthRow > 2 ? growthRow - 2 : 0; r <= growthRow + 2 && r < failureRow; ++r)
        if (s.finite[r])
            around.push_back(s.log[r]);
    for (size_t r = failureRow; r-- > growthRow && last.size() < 5;)
        if (s.finite[r])
            last.push_back(s.log[r]);
    const bool primaryFlat = growthRow < failureRow && std::isfinite(rise.baseline) && !around.empty() &&
                             !last.empty() && medianOf(around) - rise.baseline < config.jumpDecades &&
                             medianOf(last) - rise.baseline < config.jumpDecades;
    if (p.riseDecades >= kPrecursorDecades && primaryFlat)
        return found;
    return std::optional<Precursor>{};
}

Status reportBlowup(ScanContext& context, const Failure& failure)
{
    const ScanConfig& config = context.config;
    const RunScalars& scalars = context.scalars;
    const std::vector<int64_t>& steps = scalars.steps;
    const LogSeries& s = scalars.primary();
    const size_t failureRow = failure.row;
    const int64_t failureStep = steps[failureRow];
    size_t windowBegin = rowAtOrAfter(steps, failureStep - config.lookbackSteps);
    // Do not look back past an earlier incident's burst: it is not the baseline.
    if (!context.burstRows.empty()) {
        const size_t afterBurst = context.burstRows.back().second + 1;
        if (afterBurst > windowBegin && afterBurst < failureRow)
            windowBegin = afterBurst;
    }
    const size_t lastRow = std::min(s.size() - 1, failure.lastRow     ? *failure.lastRow
                                                  : failure.nonfinite ? failureRow
                                                                      : s.size() - 1);
    const Rise rise = findOnset(s, windowBegin, failureRow, config);
    const std::optional<Jump> jump = suddenJump(context, windowBegin, failureRow, lastRow, rise);
    bool sudden = jump.has_value();
    size_t onsetRow = sudden ? jump->row : std::min(rise.onsetRow, failureRow);
    double baseline = sudden ? jump->baseline : rise.baseline;

    const Incident* blamedInput = context.badInputNear(steps[onsetRow], 1, 0);
    // A batch with extreme values (a missing feature read as zeros) may be what met the 0/0; only
    // a batch holding NaN/Inf itself puts the origin in the data.
    const bool nanInput = blamedInput && blamedInput->severity == Severity::Critical;
    auto judgedOrigin = judgeNonfiniteOrigin(context, failure, windowBegin, nanInput, rise.onsetRow < failureRow);
    if (!judgedOrigin)
        return Error{judgedOrigin.error()};
    OriginJudgement& born = *judgedOrigin;
    std::optional<NonfiniteOrigin> origin = born.origin;
    const std::vector<std::string>& nanParameters = born.nanParameters;
    const bool everyParameter = born.everyParameter;
    const bool spreadBetweenRows = born.spreadBetweenRows;
    const bool stableBefore = born.stableBefore;
    bool bornInWeights = born.bornInWeights;
    std::optional<Precursor> precursor;
    if ((!bornInWeights || spreadBetweenRows) && !blamedInput) {
        auto found = leadingPrecursor(context, failureRow, onsetRow, rise);
        if (!found)
            return Error{found.error()};
        if (*found) {
            // The onset is read off the found precursor, not the optional it is copied into:
            // GCC 12 warns the optional's member "may be used uninitialized" there.
            onsetRow = rowAtOrAfter(steps, (*found)->onsetStep);
            precursor = *found;
            sudden = false;
            baseline = rise.baseline;
            bornInWeights = false;
            if (spreadBetweenRows)
                origin.reset(); // the weights were non-finite by then, but the growth came first
        }
    }
    if (bornInWeights) {
        // One update did it: the one of the last logged step whose weights were finite. The noise
        // before it is not an onset.
        sudden = true;
        onsetRow = born.updateStep && born.updateStepExact ? failureRow - 1 : failureRow;
        baseline = levelBefore(context, failureRow);
    }
    // A "sudden" failure of the gradient norm that the loss and the parameter norm climbed to for
    // hundreds of steps is gradual: the logged norm was clipped, or flat.
    std::optional<Climb> lossClimb, paramClimb;
    std::optional<double> primaryRise;
    // The growth is measured on the loss when the loss climbed and the primary series did not
    // (a clipped gradient norm): its baseline and slope are the loss's, and so is the series the
    // evidence names, so that the fitted trend is drawn on the loss plot, through the loss.
    bool measuredOnLoss = false;
    if (sudden && !bornInWeights && !precursor && !blamedInput && !scalars.gradNorm.empty()) {
        lossClimb = steadyClimb(scalars.loss.raw, windowBegin, failureRow);
        if (lossClimb && context.inputs.hasDataset(rf::kScalars, rf::scalar::kParamNorm))
            if (auto norms = context.inputs.readSeries(rf::kScalars, rf::scalar::kParamNorm))
                paramClimb = steadyClimb(*norms, windowBegin, failureRow);
        if (lossClimb) {
            sudden = false;
            onsetRow = lossClimb->fromRow;
            measuredOnLoss = true;
            std::vector<double> start;
            for (size_t r = onsetRow; r < failureRow && start.size() < 9; ++r)
                if (scalars.loss.finite[r])
                    start.push_back(scalars.loss.log[r]);
            baseline = start.empty() ? rise.baseline : medianOf(start);
            std::vector<double> first, last;
            for (size_t r = onsetRow; r < failureRow && first.size() < 9; ++r)
                if (s.finite[r])
                    first.push_back(s.log[r]);
            for (size_t r = failureRow; r-- > onsetRow && last.size() < 9;)
                if (s.finite[r])
                    last.push_back(s.log[r]);
            if (!first.empty() && !last.empty())
                primaryRise = std::pow(10.0, medianOf(last) - medianOf(first));
        }
    }
    // A jump at the top of a learning rate that climbed row after row is the end of a gradual
    // climb in the step size (the updates grew with it), not one bad batch: gradual from where the
    // learning rate began to climb.
    std::optional<Climb> lrClimb;
    if (sudden && !bornInWeights && !precursor && !blamedInput) {
        lrClimb = learningRateClimb(scalars, windowBegin, onsetRow);
        if (lrClimb) {
            sudden = false;
            onsetRow = lrClimb->fromRow;
            std::vector<double> start;
            for (size_t r = onsetRow; r < failureRow && start.size() < 9; ++r)
                if (s.finite[r])
                    start.push_back(s.log[r]);
            baseline = start.empty() ? rise.baseline : medianOf(start);
        }
    }
    const int64_t onsetStep = precursor ? precursor->onsetStep : steps[onsetRow];
    // Decided: the vanishing rule's stream, running beside the rules, stops before it at once
    // (what comes below reads the layers' windows, and the stream would read on past the onset).
    context.blowupOnsetRow = onsetRow;
    context.blowupOnsetStep = onsetStep;
    limitVanishingStream(context);

    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.severity = failure.severity;
    incident.onsetStep = onsetStep;
    auto& evidence = incident.evidence;
    evidence.series = measuredOnLoss ? rf::scalarSeries(rf::scalar::kLoss) : scalars.primaryName;
    evidence.windowBeginStep = onsetStep;
    evidence.note = failure.note;
    if (std::isfinite(baseline))
        evidence.baseline = std::pow(10.0, baseline);
    // Not a sustained one-step jump from the baseline: a gradual blow-up (steady exponential
    // growth, or an escalation of spikes that come and go on the way up).
    incident.pattern = sudden ? BlowupPattern::Sudden : BlowupPattern::Gradual;

    double peak = -kInf;
    double jumpPeak = -kInf;
    std::vector<double> x, y;
    const LogSeries& measured = measuredOnLoss ? scalars.loss : s;
    for (size_t r = onsetRow; r <= lastRow && r < measured.size(); ++r) {
        if (!measured.finite[r])
            continue;
        peak = std::max(peak, measured.log[r]);
        if (steps[r] - onsetStep <= config.jumpSteps)
            jumpPeak = std::max(jumpPeak, measured.log[r]);
        x.push_back(double(steps[r]));
        y.push_back(measured.log[r]);
    }
    if (std::isfinite(peak))
        evidence.peak = std::pow(10.0, peak);
    if (std::isfinite(baseline)) {
        const double top = sudden ? jumpPeak : peak;
        if (std::isfinite(top))
            evidence.jumpRatio = std::pow(10.0, top - baseline);
    }
    // The growth before the failure; a lone point (sudden jump straight to NaN) has no slope.
    if (x.size() >= 2)
        evidence.growthDecadesPerStep = theilSenSlope(x, y);
    else if (x.size() == 1 && std::isfinite(baseline) && steps[lastRow] > onsetStep)
        evidence.growthDecadesPerStep = (y[0] - baseline) / double(steps[lastRow] - onsetStep);

    if (precursor) {
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
    evidence.nonfiniteOrigin = origin;
    evidence.gradLeadSteps = gradientLead(context, windowBegin, failureRow);

    // Non-finite step: first NaN/Inf in the loss, the grad norm, or any layer in the window.
    std::optional<int64_t> nonfiniteStep;
    for (size_t r = onsetRow; r < steps.size(); ++r)
        if (scalars.rowNonfinite(r)) {
            nonfiniteStep = steps[r];
            break;
        }
    const int64_t windowEnd = failure.nonfinite ? failureStep + config.jumpSteps : context.report.lastStep;
    // Layers are judged over a shorter look-back than the total: their own baseline just
    // before the onset is what matters, and a thousand layers times the full window is slow.
    const int64_t layerWindowBegin = std::max(std::min(steps[windowBegin], onsetStep - 1),
                                              onsetStep - std::max<int64_t>(4 * config.baselineRows, 100));
    auto blame = blameLayers(context.inputs, context.order, config, layerWindowBegin, onsetStep, windowEnd);
    if (!blame)
        return Error{blame.error()};
    for (const auto& [onset, position] : *blame) {
        if (onset.nonfiniteStep && (!nonfiniteStep || *onset.nonfiniteStep < *nonfiniteStep) &&
            *onset.nonfiniteStep >= onsetStep)
            nonfiniteStep = onset.nonfiniteStep;
    }
    if (everyParameter && !precursor) {
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
    if (origin == NonfiniteOrigin::Parameters && !everyParameter && !nanInput && !precursor && sudden) {
        // A sudden NaN with some parameters non-finite, the others finite: the update wrote NaN into
        // these first (a gradual blow-up keeps the layers that rose first).
        std::vector<RankedOnset> weights;
        for (const auto& name : nanParameters)
            weights.push_back({LayerOnset{name, "layers/param_norm", failureStep, kInf, true, failureStep},
                               context.order.parameter(name)});
        fillLayers(incident, weights, config.maxLayersListed);
        nonfiniteStep = failureStep;
    }
    if (precursor) {
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
    evidence.windowEndStep = nonfiniteStep ? *nonfiniteStep : steps[lastRow];

    BlowupFacts facts;
    facts.series = scalars.gradNorm.empty() ? "loss" : "gradient norm";
    facts.sudden = sudden;
    facts.onsetStep = onsetStep;
    facts.nonfiniteStep = nonfiniteStep;
    facts.windowEndStep = evidence.windowEndStep;
    facts.jumpRatio = evidence.jumpRatio;
    facts.growthDecadesPerStep = evidence.growthDecadesPerStep;
    facts.baseline = evidence.baseline;
    facts.firstLayer = incident.layers.empty() ? std::string() : incident.layers.front();
    facts.bornInWeights = bornInWeights;
    if (lossClimb) {
        facts.lossClimb = std::pow(10.0, lossClimb->rise);
        if (paramClimb)
            facts.paramNormClimb = std::pow(10.0, paramClimb->rise);
        facts.primaryRise = primaryRise;
    }
    facts.stableBefore = stableBefore;
    facts.firstLayerUndetermined = everyParameter && !precursor && incident.layers.empty();
    facts.nanParameters = nanParameters;
    if (bornInWeights) {
        facts.updateStep = born.updateStep;
        facts.updateStepExact = born.updateStepExact;
        facts.zeroGradientParameters = born.zeroGradientParameters;
    }
    facts.previousLoggedStep = failureRow > 0 ? std::optional<int64_t>(steps[failureRow - 1]) : std::nullopt;
    if (precursor) {
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
    }
    if (const Incident* input = context.badInputNear(onsetStep, 1, 0); input && !bornInWeights)
        facts.input = BlamedInput{input->onsetStep, input->severity == Severity::Critical, input->evidence.note,
                                  context.batchNote(input->onsetStep)};
    facts.nanInFirstSteps = onsetRow <= 2 && nonfiniteStep && *nonfiniteStep <= context.report.firstStep + 2;
    facts.firstLoggedStep = context.report.firstStep;
    // Non-finite from the first logged value: there is no growth to see, so no pattern to name.
    if (facts.nanInFirstSteps)
        incident.pattern.reset();
    facts.learningRateRise =
        scalars.learningRateRise(std::max(windowBegin, onsetRow > 50 ? onsetRow - 50 : size_t(0)), lastRow);
    if (lrClimb) {
        facts.learningRateClimb = std::pow(10.0, lrClimb->rise);
        facts.learningRateRise.reset(); // the climb says it, from where it began
    }
    facts.fp16 = context.inputs.fp16();
    facts.batchNote = context.batchNote(onsetStep);
    applyDiagnosis(incident, diagnoseBlowup(facts));
    // The weights went first: the normalisation statistics a forward pass through them poisoned are
    // its consequence, and point to it (the root is the incident a user fixes).
    if (bornInWeights)
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
    // The burst starts at its first non-finite step: the incident's "non-finite at" (issue 51: the
    // window's and the report's cell was empty for this kind).
    incident.nonfiniteStep = first;
    incident.evidence.series = scalars.loss.finite[burst.firstRow] ? scalars.primaryName : rf::scalarSeries("loss");
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
