// A module's output range growing by orders of magnitude toward the float16 (or bfloat16) limit,
// in a run that has not blown up (yet): the warning before an overflow. Attention logits grow like
// this for a hundred steps before float16 softmax overflows. Streams /activations once; per module
// it keeps a decimated series (the largest magnitude per bucket of rows).
#include "core/scan/ScanRules.h"

#include "core/run/LayerNames.h"
#include "core/run/RunFormat.h"
#include "core/scan/Onset.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

// Buckets per module: enough to find an onset, few enough for a thousand modules.
constexpr size_t kBuckets = 512;
// Growth (decades over the module's early level) that, with a peak near the float16 limit
// (nearFloat16Limit), makes a warning: x100 and within x16 of overflowing.
constexpr double kGrowthDecades = 2.0;

bool namedLikeAttention(const std::string& text)
{
    return layernames::mentionsAny(text, {"attn", "attention", "score", "logit", "qk"});
}

// Each module's largest finite output magnitude per bucket of rows (NaN until one is seen), and
// the first step its output held Inf, from one pass over /activations.
struct BucketPeaks
{
    size_t bucketRows = 0, buckets = 0;
    std::vector<float> top; // [bucket * width + module]
    std::vector<int64_t> overflowStep;
};

Result<BucketPeaks> bucketPeaks(const ScanContext& context, int64_t rows, size_t width)
{
    const ScanInputs& inputs = context.inputs;
    const auto& steps = inputs.steps(rf::kActivations);
    BucketPeaks peaks;
    const size_t bucketRows = peaks.bucketRows = size_t((rows + int64_t(kBuckets) - 1) / int64_t(kBuckets));
    peaks.buckets = size_t((rows + int64_t(bucketRows) - 1) / int64_t(bucketRows));
    // Largest finite magnitude per bucket and module; NaN until one is seen. Overflow: the first
    // row where the module's output held Inf/NaN.
    // float: the largest |max| or |min| is one of the logged float values, so nothing is lost.
    std::vector<float>& top = peaks.top;
    top.assign(peaks.buckets * width, std::numeric_limits<float>::quiet_NaN());
    std::vector<int64_t>& overflowStep = peaks.overflowStep;
    overflowStep.assign(width, -1);
    const bool hasMin = inputs.hasDataset(rf::kActivations, rf::column::kMin);
    const bool hasInf = inputs.hasDataset(rf::kActivations, rf::column::kInf);
    std::vector<float>& highs = inputs.blockBuffer(0);
    std::vector<float>& lows = inputs.blockBuffer(1);
    std::vector<float>& infs = inputs.blockBuffer(2);
    for (int64_t begin = 0; begin < rows; begin += context.config.blockRows) {
        const int64_t count = std::min<int64_t>(context.config.blockRows, rows - begin);
        if (Status st = inputs.readBlockInto(rf::kActivations, rf::column::kMax, begin, count, highs); !st)
            return Error{st.error()};
        if (hasMin)
            if (Status st = inputs.readBlockInto(rf::kActivations, rf::column::kMin, begin, count, lows); !st)
                return Error{st.error()};
        if (hasInf)
            if (Status st = inputs.readBlockInto(rf::kActivations, rf::column::kInf, begin, count, infs); !st)
                return Error{st.error()};
        for (int64_t r = 0; r < count; ++r) {
            const size_t row = size_t(begin + r);
            const float* high = highs.data() + size_t(r) * width;
            const float* low = hasMin ? lows.data() + size_t(r) * width : high;
            float* slots = top.data() + (row / bucketRows) * width;
            // No branch on the data: built with -O3, this loop is vector code (it sees every
            // value of three /activations datasets). A NaN max stays NaN and is never kept.
            for (size_t c = 0; c < width; ++c) {
                const float v = std::max(std::fabs(high[c]), std::fabs(low[c]));
                const bool keep = v <= std::numeric_limits<float>::max() && v > 0 && !(slots[c] >= v);
                slots[c] = keep ? v : slots[c];
            }
            if (hasInf) {
                const float* inf = infs.data() + size_t(r) * width;
                for (size_t c = 0; c < width; ++c)
                    if (inf[c] > 0 && overflowStep[c] < 0)
                        overflowStep[c] = steps[row];
            }
        }
    }
    return peaks;
}

// The warning of the module whose output grew closest to the float16 limit.
Incident activationGrowthIncident(const ActivationGrowthFacts& facts)
{
    Incident incident;
    incident.kind = IncidentKind::ActivationGrowth;
    incident.severity = Severity::Warning;
    incident.onsetStep = facts.onsetStep;
    incident.layers = {facts.module};
    auto& e = incident.evidence;
    e.series = "activations/" + facts.module;
    e.windowBeginStep = facts.onsetStep;
    e.windowEndStep = facts.peakStep;
    e.baseline = facts.baseline;
    e.peak = facts.peak;
    e.jumpRatio = facts.peak / facts.baseline;
    e.growthDecadesPerStep = facts.decadesPerStep;
    e.headroomOf = facts.module;
    e.float16HeadroomDecades = facts.float16HeadroomDecades;
    e.bfloat16HeadroomDecades = headroomDecades(facts.peak, kBFloat16Max);
    applyDiagnosis(incident, diagnoseActivationGrowth(facts));
    return incident;
}

} // namespace

Status detectActivationGrowth(ScanContext& context)
{
    const ScanInputs& inputs = context.inputs;
    if (!inputs.hasDataset(rf::kActivations, rf::column::kMax))
        return Status::success();
    const TableInfo* table = inputs.table(rf::kActivations);
    const auto& steps = inputs.steps(rf::kActivations);
    const int64_t rows = std::min<int64_t>(table->rows, int64_t(steps.size()));
    const size_t width = table->names.size();
    if (rows < 16 || width == 0)
        return Status::success();
    auto peaks = bucketPeaks(context, rows, width);
    if (!peaks)
        return Error{peaks.error()};
    const size_t bucketRows = peaks->bucketRows, buckets = peaks->buckets;
    const std::vector<float>& top = peaks->top;
    const std::vector<int64_t>& overflowStep = peaks->overflowStep;
    struct Finding
    {
        ActivationGrowthFacts facts;
        double headroom;
    };
    std::optional<Finding> worst;
    for (size_t c = 0; c < width; ++c) {
        std::vector<int64_t> bucketSteps;
        std::vector<double> values;
        for (size_t b = 0; b < buckets; ++b)
            if (std::isfinite(top[b * width + c])) {
                bucketSteps.push_back(steps[std::min(size_t(rows - 1), b * bucketRows)]);
                values.push_back(top[b * width + c]);
            }
        if (values.size() < 8)
            continue;
        const LogSeries s = makeLogSeries(bucketSteps, values);
        size_t peakRow = 0;
        for (size_t r = 1; r < s.size(); ++r)
            if (s.log[r] >= s.log[peakRow])
                peakRow = r;
        std::vector<double> early(s.log.begin(), s.log.begin() + std::max<size_t>(2, s.size() / 4));
        const double earlyLevel = medianOf(early);
        const double peak = s.raw[peakRow];
        const double headroom = overflowStep[c] >= 0 ? 0.0 : headroomDecades(peak, kFloat16Max);
        if (!(s.log[peakRow] - earlyLevel >= kGrowthDecades) || !nearFloat16LimitDecades(headroom) || peakRow < 4)
            continue;
        // No growth either: most of the rise in one step up to the peak, where a spike was
        // reported (one huge update). That incident is the jump; measured from the early level,
        // it would read as a growth that began at the start of training.
        if (s.log[peakRow] - s.log[peakRow - 1] >= 0.5 * (s.log[peakRow] - earlyLevel) &&
            std::any_of(context.report.incidents.begin(), context.report.incidents.end(), [&](const Incident& i) {
                return i.kind == IncidentKind::Spike && i.onsetStep - context.config.jumpSteps <= s.steps[peakRow] &&
                       s.steps[peakRow] <= i.evidence.windowEndStep + context.config.jumpSteps;
            }))
            continue;
        ScanConfig onsetConfig = context.config;
        onsetConfig.smoothingRows = 1;
        const Rise rise = findOnset(s, 0, peakRow + 1, onsetConfig);
        ActivationGrowthFacts facts;
        facts.module = table->names[c];
        facts.onsetStep = s.steps[std::min(rise.onsetRow, peakRow)];
        facts.peakStep = overflowStep[c] >= 0 ? overflowStep[c] : s.steps[peakRow];
        // A blow-up already reported from before this growth peaked explains it (and carries
        // the headroom in its evidence).
        if (context.blowupOnsetStep && *context.blowupOnsetStep <= facts.peakStep)
            continue;
        // No growth: one step up, with an extreme input batch at that step (the bad-input rule
        // names it; a 1e30 sample passes through every layer).
        if (facts.peakStep - facts.onsetStep <= context.config.jumpSteps &&
            context.badInputNear(facts.onsetStep, 1, facts.peakStep - facts.onsetStep))
            continue;
        facts.baseline = std::pow(10.0, std::isfinite(rise.baseline) ? rise.baseline : earlyLevel);
        facts.peak = peak;
        facts.float16HeadroomDecades = headroom;
        std::vector<double> x, y;
        for (size_t r = std::min(rise.onsetRow, peakRow); r <= peakRow; ++r) {
            x.push_back(double(s.steps[r]));
            y.push_back(s.log[r]);
        }
        facts.decadesPerStep = x.size() >= 2 ? theilSenSlope(x, y) : 0.0;
        const std::string kind = c < table->kinds.size() ? table->kinds[c] : "";
        facts.looksLikeAttention = namedLikeAttention(facts.module) || namedLikeAttention(kind);
        if (!worst || headroom < worst->headroom)
            worst = Finding{facts, headroom};
    }
    if (!worst)
        return Status::success();
    context.report.incidents.push_back(activationGrowthIncident(worst->facts));
    return Status::success();
}

} // namespace nanscope::scan
