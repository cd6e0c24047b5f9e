#include "core/scan/Precursor.h"

#include "core/NumberText.h"
#include "core/run/LayerNames.h"
#include "core/run/RunFormat.h"
#include "core/scan/ExpertLoad.h"
#include "core/scan/Onset.h"
#include "core/tensor/FloatLimits.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// How monotone a climb must be (Spearman's rank correlation of value against step, from the
// onset to the failure) to count at `minDecades`: a drift, not noise around a level.
constexpr double kMonotoneRank = 0.8;
// A climb whose second half is this many times steeper than its first began at a later knee.
constexpr double kSecondKneeRatio = 4.0;
// The rise (decades) that suffices for a climb that ended within reach of a numeric limit.
constexpr double kLimitDecades = 0.35;
// Where the series sits at the failure, as a share of its climb: a quantity that rose and came
// back down before the failure is not what failed.
constexpr double kStillUpShare = 0.75;
// A climb that reached its top band (decades under its peak) and held there: the share of rows to
// the failure within twice that band.
constexpr double kTopBandDecades = 0.05;
constexpr double kHeldShare = 0.9;
// How close under the limit it held (the median of the rows held): within x1.2, where a batch's own
// spread crosses it (a level learning reached at x1.23 under it and kept is no precursor).
constexpr double kHeldUnderLimitDecades = 0.08;

double spearman(const std::vector<double>& x, const std::vector<double>& y)
{
    const size_t n = x.size();
    if (n < 3)
        return 0;
    auto ranks = [n](const std::vector<double>& v) {
        std::vector<size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
        std::vector<double> rank(n);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j + 1 < n && v[order[j + 1]] == v[order[i]])
                ++j;
            for (size_t k = i; k <= j; ++k)
                rank[order[k]] = 0.5 * double(i + j);
            i = j + 1;
        }
        return rank;
    };
    const std::vector<double> rx = ranks(x), ry = ranks(y);
    const double mean = 0.5 * double(n - 1);
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; ++i) {
        sxy += (rx[i] - mean) * (ry[i] - mean);
        sxx += (rx[i] - mean) * (rx[i] - mean);
        syy += (ry[i] - mean) * (ry[i] - mean);
    }
    return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

// The knee of a flat-then-straight fit (log scale) over rows [lo, n): the row where the flat level
// ends and the climb begins. Prefix sums make each candidate O(1), so a 20,000-row column costs
// 20,000 steps, not 20,000 squared.
size_t kneeRow(const std::vector<double>& xs, const std::vector<double>& ys, size_t lo, size_t firstKnee)
{
    const size_t n = ys.size();
    const double x0 = xs[lo];
    std::vector<double> sy(n + 1, 0), syy(n + 1, 0), sx(n + 1, 0), sxx(n + 1, 0), sxy(n + 1, 0);
    for (size_t r = 0; r < n; ++r) {
        const double x = r >= lo ? xs[r] - x0 : 0;
        sy[r + 1] = sy[r] + ys[r];
        syy[r + 1] = syy[r] + ys[r] * ys[r];
        sx[r + 1] = sx[r] + x;
        sxx[r + 1] = sxx[r] + x * x;
        sxy[r + 1] = sxy[r] + x * ys[r];
    }
    size_t best = firstKnee;
    double bestError = INFINITY;
    for (size_t k = std::max(firstKnee, lo + 1); k + 4 <= n; ++k) {
        const double m = double(k - lo);
        const double level = (sy[k] - sy[lo]) / m;
        const double flatError = (syy[k] - syy[lo]) - m * level * level;
        // Rows [k, n): y - level against x - xk, a line through the knee's level.
        const double mk = double(n - k);
        const double xk = xs[k] - x0;
        const double SX = sx[n] - sx[k], SY = sy[n] - sy[k];
        const double SXX = sxx[n] - sxx[k], SYY = syy[n] - syy[k], SXY = sxy[n] - sxy[k];
        const double dxdx = SXX - 2 * xk * SX + mk * xk * xk;
        const double dxdy = SXY - level * SX - xk * SY + mk * xk * level;
        const double dydy = SYY - 2 * level * SY + mk * level * level;
        const double lineError = dxdx > 0 ? dydy - dxdy * dxdy / dxdx : dydy;
        const double error = flatError + lineError;
        if (error < bestError) {
            bestError = error;
            best = k;
        }
    }
    return best;
}

// Refines a fitted knee to where the departure became sustained: the first row from which nearly
// every row lies above the level before the knee by more than its noise (and by a twentieth of the
// whole climb, so that a slow creep inside the baseline does not count).
size_t sustainedDeparture(const std::vector<double>& ys, size_t knee, size_t baselineRows, double sigmas)
{
    const size_t n = ys.size();
    const size_t begin = knee > baselineRows ? knee - baselineRows : 0;
    if (knee - begin < 3)
        return knee;
    const double level =
        medianOf(std::vector<double>(ys.begin() + std::ptrdiff_t(begin), ys.begin() + std::ptrdiff_t(knee)));
    // The noise from row-to-row differences: a level that still moves (a model still learning)
    // does not widen it.
    std::vector<double> steps;
    for (size_t r = begin + 1; r < knee; ++r)
        steps.push_back(std::fabs(ys[r] - ys[r - 1]));
    const double noise = 1.4826 * medianOf(steps) / std::sqrt(2.0);
    double top = -INFINITY;
    for (size_t r = knee; r < n; ++r)
        top = std::max(top, ys[r]);
    const double threshold = level + std::max({sigmas * noise, 0.05 * (top - level), 0.02});
    // Suffix share of rows above the threshold; the onset is the first row above it from which
    // nine in ten rows to the failure are.
    std::vector<size_t> above(n + 1, 0);
    for (size_t r = n; r-- > knee;)
        above[r] = above[r + 1] + (ys[r] > threshold ? 1 : 0);
    for (size_t r = knee; r < n; ++r)
        if (ys[r] > threshold && double(above[r]) >= 0.9 * double(n - r))
            return r;
    return n;
}

int sourceRank(const std::string& source)
{
    if (source == "activations")
        return 0;
    if (source == "layers/param_norm")
        return 1;
    if (source == "layers/grad_norm")
        return 2;
    return 3;
}

// Logged scalars that are quantities inside the model (a temperature, a router statistic), not
// the training's own bookkeeping or metrics that rise as training works (an accuracy).
bool modelQuantity(const std::string& name)
{
    return !layernames::mentionsAny(name, {"loss", "lr", "learning_rate", "time", "step", "epoch", "throughput",
                                           "token", "sample", "mem", "acc", "f1", "auc", "precision", "recall",
                                           "bleu", "rouge", "ppl", "perplexity", "score", "skipped", "grad_norm",
                                           "param_norm", "rank", "batch", "count", "speed", "flops", "reward",
                                           "return"});
}

} // namespace

bool takenExpOf(const std::string& name)
{
    return layernames::mentionsAny(name, {"logit", "temperature", "scale", "score", "router", "gate", "softmax",
                                          "energy", "head", "classifier"});
}

bool logScaleQuantity(const std::string& name)
{
    return layernames::mentionsAny(name, {"log_std", "logstd", "log_sigma", "logsigma", "log_var", "logvar",
                                          "log_alpha", "log_scale", "log_temp", "logit_scale"});
}

std::optional<NumericLimit> numericLimitNear(double peak)
{
    const double value = std::fabs(peak);
    if (!std::isfinite(value) || value <= 0)
        return std::nullopt;
    // Within x1.3 below: the largest value of the next batch crosses that stretch. Further below,
    // the level is one that ordinary training reaches (logits of 5 to 8) and stays at.
    constexpr double kWithin = 1.3;
    // Well past an exp limit and still finite: nothing computed exp() of it in that precision. A
    // little past it (x1.1) is a module output that feeds the exp through a sum: an adapter's
    // output added to the base layer's logits, which sat lower.
    constexpr double kPast = 1.1;
    if (value >= kFloat16ExpLimit / kWithin && value <= kFloat16ExpLimit * kPast)
        return NumericLimit{kFloat16ExpLimit, "exp() overflows float16 above " + numberText(kFloat16ExpLimit, 4)};
    if (value >= kFloat32ExpLimit / kWithin && value <= kFloat32ExpLimit * kPast)
        return NumericLimit{kFloat32ExpLimit,
                            "exp() overflows float32 and bfloat16 above " + numberText(kFloat32ExpLimit, 3)};
    if (nearFloat16LimitDecades(std::log10(kFloat16Max / value)))
        return NumericLimit{kFloat16Max, "float16's largest value is " + float16MaxText()};
    return std::nullopt;
}

namespace {

// What a climb amounts to: the numeric limit it came near (if that limit explains a failure of
// this quantity), and for a log-scale quantity how far exp() of it moved; `strength` is the larger
// of its own rise and that.
struct ClimbMeasure
{
    std::optional<NumericLimit> limit;
    std::optional<double> expScaleDecades;
    double strength = 0;
};

ClimbMeasure measureClimb(const LayerColumn& column, double peakRaw, double baseline, double riseDecades, bool inEFolds)
{
    std::optional<NumericLimit> limit;
    // A module output, or a logged temperature, logit scale or logit, can be what exp() is
    // taken of; a parameter's norm sums a whole tensor and is not, and another logged scalar (an
    // accuracy, a throughput) is not either.
    const bool logScale = logScaleQuantity(column.name);
    if (column.source == "activations" || (column.source == rf::kScalars && (takenExpOf(column.name) || logScale)))
        limit = numericLimitNear(peakRaw);
    // Near exp()'s limit, that limit explains the failure only for a quantity whose name says
    // exp() is taken of it. Any other module output (an expert's, a policy's hidden layer) may
    // only feed one, and sits at 9 in ordinary training as well: no limit, and the rise it needs is
    // a precursor's own (a mixture of experts with every expert logged found a false precursor in
    // one expert's growth of x2.7; a PPO policy's hidden layer, in a growth of x3.2 that learning
    // made while the log standard deviation drifted).
    if (limit && limit->value < kFloat16Max && !takenExpOf(column.name) && !logScale)
        limit.reset();
    // A log-scale quantity is measured by what exp() makes of it: its norm's growth from the
    // baseline to the peak, in e-folds, read as decades; so is a router's largest logit. Not any
    // other module output exp() is taken of: logits, heads and attention scores grow by e-folds
    // while a model learns, and counted so they made precursors of ordinary learning before sudden
    // failures (the families corpus).
    std::optional<double> expScaleDecades;
    if (inEFolds) {
        const double grown = peakRaw - std::pow(10.0, baseline);
        if (grown > 0)
            expScaleDecades = grown / std::log(10.0);
    }
    return {limit, expScaleDecades, std::max(riseDecades, expScaleDecades.value_or(0.0))};
}

// A column's finite, non-zero rows before the failure, and what kind of quantity it is.
struct ColumnRows
{
    LogSeries finite;
    bool inEFolds = false;
    std::optional<std::string> routed;
};

std::optional<Precursor> climbPrecursor(const LayerColumn& column, const ColumnRows& rows, size_t climbEnd,
                                        const ScanConfig& config, const PrecursorSearch& search);

// The precursor of one column, when it has one: a climb up to the failure, or one into a numeric
// limit's reach that then held there until a batch crossed it (a LoRA adapter's output at the
// float16 exp() limit for 500 steps while the loss sat at its floor).
std::optional<Precursor> columnPrecursor(const LayerColumn& column, const ScanConfig& config,
                                         const PrecursorSearch& search, const std::vector<std::string>& parameters)
{
    const LogSeries& s = column.series;
    // The finite, non-zero rows before the failure: an exact zero (a LoRA adapter's zero-initialised
    // weight) has no level on a log scale; it is "not yet", not a baseline.
    ColumnRows rows;
    LogSeries& finite = rows.finite;
    double lowest = INFINITY, highest = -INFINITY;
    for (size_t r = 0; r < s.size(); ++r) {
        if (!s.finite[r] || s.raw[r] == 0 || s.steps[r] >= search.failureStep)
            continue;
        finite.steps.push_back(s.steps[r]);
        finite.log.push_back(s.log[r]);
        finite.finite.push_back(1);
        finite.raw.push_back(s.raw[r]);
        lowest = std::min(lowest, s.log[r]);
        highest = std::max(highest, s.log[r]);
    }
    const size_t n = finite.size();
    // The rise below is the last rows' peak over a median of earlier rows: never more than the
    // column's spread. Most columns of a thousand-layer run are flat; they stop here.
    // A log-scale quantity is one by its name, whether a parameter, a module's output (a
    // log-variance head: its largest magnitude) or a logged scalar; not a gradient.
    const bool logScale = column.source != "layers/grad_norm" && logScaleQuantity(column.name);
    const std::optional<std::string> routed =
        column.source == "activations" ? routedExperts(column.name, parameters) : std::nullopt;
    const bool inEFolds = logScale || routed.has_value();
    rows.inEFolds = inEFolds;
    rows.routed = routed;
    const double spread = inEFolds ? std::max(highest - lowest, (std::pow(10.0, highest) - std::pow(10.0, lowest)) / std::log(10.0))
                                   : highest - lowest;
    if (n < 8 || !(spread >= std::min(search.minDecades, kLimitDecades)))
        return std::nullopt;
    if (auto climb = climbPrecursor(column, rows, n, config, search))
        return climb;
    // Held at the top: the climb ends where the series first reached its top band, and from there
    // to the failure it stayed in reach of a numeric limit. Most columns are nowhere near one.
    const double top = highest;
    const std::optional<NumericLimit> limit = numericLimitNear(std::pow(10.0, top));
    if (!limit)
        return std::nullopt;
    const size_t reached = size_t(std::find_if(finite.log.begin(), finite.log.end(),
                                               [&](double v) { return v >= top - kTopBandDecades; }) -
                                  finite.log.begin());
    if (n - reached < 10)
        return std::nullopt;
    const double heldLevel =
        medianOf(std::vector<double>(finite.log.begin() + std::ptrdiff_t(reached), finite.log.end()));
    size_t heldRows = 0;
    for (size_t r = reached; r < n; ++r)
        heldRows += finite.log[r] >= top - 2 * kTopBandDecades;
    if (std::log10(limit->value) - heldLevel > kHeldUnderLimitDecades || double(heldRows) < kHeldShare * double(n - reached))
        return std::nullopt;
    // The climb must explain the failure by that limit, as measureClimb judges for this quantity (a
    // hidden layer's output, a parameter's norm: nothing takes exp() of them).
    auto held = climbPrecursor(column, rows, reached + 1, config, search);
    if (!held || !held->nearLimit)
        return std::nullopt;
    held->heldFromStep = finite.steps[reached];
    return held;
}

// The climb over the column's rows [0, climbEnd): its knee, its rise from the level before it, and
// whether that rise explains the failure.
std::optional<Precursor> climbPrecursor(const LayerColumn& column, const ColumnRows& rows, size_t climbEnd,
                                        const ScanConfig& config, const PrecursorSearch& search)
{
    const LogSeries& finite = rows.finite;
    const size_t n = climbEnd;
    const std::vector<double> ys(finite.log.begin(), finite.log.begin() + std::ptrdiff_t(n));
    const bool inEFolds = rows.inEFolds;
    const std::optional<std::string>& routed = rows.routed;
    double peak = -INFINITY;
    size_t peakRow = n - 1;
    for (size_t r = n >= 3 ? n - 3 : 0; r < n; ++r)
        if (ys[r] > peak) {
            peak = ys[r];
            peakRow = r;
        }
    // The climb from a flat level: the knee of a flat-then-straight fit (log scale) over the whole
    // window, so that the earliest departure is found however long the drift (a noise band walked
    // back from the failure is crossed late by a slow one).
    std::vector<double> xs(n);
    for (size_t r = 0; r < n; ++r)
        xs[r] = double(finite.steps[r]);
    size_t fitKnee = kneeRow(xs, ys, 0, 3);
    // A slow creep that turned into a fast climb has two knees: the departure the failure continues
    // is the second (a parameter that grew with learning from step 20, then with a learning rate
    // gone wrong from step 220). Refit after the knee while the climb's second half is much steeper
    // than its first.
    for (int refit = 0; refit < 3 && fitKnee + 10 <= n; ++refit) {
        const size_t middle = (fitKnee + n) / 2;
        const auto slopeOf = [&](size_t from, size_t to) {
            return theilSenSlope(std::vector<double>(xs.begin() + std::ptrdiff_t(from), xs.begin() + std::ptrdiff_t(to)),
                                 std::vector<double>(ys.begin() + std::ptrdiff_t(from),
                                                     ys.begin() + std::ptrdiff_t(to)));
        };
        const double early = slopeOf(fitKnee, middle), late = slopeOf(middle, n);
        if (!(late > kSecondKneeRatio * std::max(early, 0.0)))
            break;
        fitKnee = kneeRow(xs, ys, fitKnee, fitKnee + 3);
    }
    if (fitKnee + 5 > n)
        return std::nullopt;
    const size_t knee = sustainedDeparture(ys, fitKnee, size_t(config.baselineRows), config.noiseSigmas);
    if (knee + 5 > n || search.failureStep - finite.steps[knee] < search.minLeadSteps)
        return std::nullopt;
    const size_t baselineBegin = knee > size_t(config.baselineRows) ? knee - size_t(config.baselineRows) : 0;
    const double baseline =
        medianOf(std::vector<double>(ys.begin() + std::ptrdiff_t(baselineBegin),
                                     ys.begin() + std::ptrdiff_t(knee)));
    const double riseDecades = peak - baseline;
    const ClimbMeasure measure = measureClimb(column, finite.raw[peakRow], baseline, riseDecades, inEFolds);
    const std::optional<NumericLimit>& limit = measure.limit;
    const std::optional<double>& expScaleDecades = measure.expScaleDecades;
    const double strength = measure.strength;
    // A climb into a numeric limit needs less of a rise to explain the failure: x2.2.
    const double needed = limit ? std::min(search.minDecades, kLimitDecades) : search.minDecades;
    if (!(strength >= needed))
        return std::nullopt;
    // Steady, not one last jump: already a quarter of the way up halfway to the failure.
    const size_t middle = (knee + n) / 2;
    std::vector<double> aroundMiddle;
    for (size_t r = middle > 0 ? middle - 1 : 0; r <= middle + 1 && r < n; ++r)
        aroundMiddle.push_back(ys[r]);
    if (!(medianOf(aroundMiddle) - baseline >= 0.25 * riseDecades))
        return std::nullopt;
    std::vector<double> x, y;
    for (size_t r = knee; r < n; ++r) {
        x.push_back(double(finite.steps[r]));
        y.push_back(ys[r]);
    }
    const double slope = theilSenSlope(x, y);
    if (!(slope > 0))
        return std::nullopt;
    // Still up at the failure: the last rows hold most of the climb (its 90th percentile).
    std::vector<double> climb = y;
    std::sort(climb.begin(), climb.end());
    const double top = climb[size_t(0.9 * double(climb.size() - 1))];
    if (!(peak - baseline >= kStillUpShare * (top - baseline)))
        return std::nullopt;
    // A moderate rise must be a drift (monotone from the knee to the failure) into a numeric limit
    // that explains the failure, or a router's logits drifting up (what exp() makes of them grew).
    if (strength < search.strongDecades && !((limit || routed) && spearman(x, y) >= kMonotoneRank))
        return std::nullopt;
    Precursor p;
    p.name = column.name;
    p.source = column.source;
    p.onsetStep = finite.steps[knee];
    p.baseline = std::pow(10.0, baseline);
    p.peak = finite.raw[peakRow];
    p.riseDecades = riseDecades;
    p.decadesPerStep = slope;
    p.nearLimit = limit;
    p.expScaleDecades = expScaleDecades;
    p.routedExperts = routed.value_or(std::string());
    return p;
}

} // namespace

Result<std::optional<Precursor>> findPrecursor(const ScanInputs& inputs, const ScanConfig& config,
                                               const PrecursorSearch& search)
{
    std::vector<Precursor> found;
    // The parameters inside experts, once per search: the router test (routedExperts) walks them for
    // each module column, and in a model without experts there are none to walk.
    std::vector<std::string> parameters;
    if (const TableInfo* layers = inputs.table(rf::kLayers))
        for (const std::string& name : layers->names)
            if (layernames::mentionsAny(name, {"expert"}))
                parameters.push_back(name);
    struct Source
    {
        const char* table;
        const char* value;
        const char* countA;
        const char* countB;
    };
    for (const Source& source : {Source{rf::kActivations, rf::column::kMax, rf::column::kNan, rf::column::kInf},
                                 Source{rf::kLayers, rf::column::kParamNorm, rf::column::kParamNonfinite, nullptr}}) {
        // Not the per-layer gradient norms: one layer's gradient creeping up from the first steps
        // is common in healthy training, and where gradients lead they are the primary series'
        // own rise (and the layer blame's first bad layer).
        if (!inputs.hasDataset(source.table, source.value))
            continue;
        auto visited = inputs.visitWindow(source.table, source.value, source.countA, source.countB,
                                          search.windowBeginStep, search.failureStep - 1, 0,
                                          [&](const LayerColumn& column) {
                                              if (auto p = columnPrecursor(column, config, search, parameters))
                                                  found.push_back(std::move(*p));
                                          });
        if (!visited)
            return Error{visited.error()};
    }
    if (const TableInfo* scalars = inputs.table(rf::kScalars)) {
        const std::vector<int64_t>& steps = inputs.steps(rf::kScalars);
        const size_t begin = rowAtOrAfter(steps, search.windowBeginStep);
        for (const std::string& dataset : scalars->datasets) {
            if (!modelQuantity(dataset))
                continue;
            auto values = inputs.readSeries(rf::kScalars, dataset);
            if (!values)
                continue; // a string or damaged column is not a quantity to follow
            LayerColumn column;
            column.name = dataset;
            column.source = rf::kScalars;
            const size_t end = std::min(steps.size(), values->size());
            std::vector<int64_t> windowSteps(steps.begin() + std::ptrdiff_t(std::min(begin, end)),
                                             steps.begin() + std::ptrdiff_t(end));
            std::vector<double> windowValues(values->begin() + std::ptrdiff_t(std::min(begin, end)),
                                             values->begin() + std::ptrdiff_t(end));
            column.series = makeLogSeries(windowSteps, windowValues);
            if (auto p = columnPrecursor(column, config, search, parameters))
                found.push_back(std::move(*p));
        }
    }
    if (std::any_of(found.begin(), found.end(), [](const Precursor& p) { return !p.heldFromStep; }))
        found.erase(std::remove_if(found.begin(), found.end(), [](const Precursor& p) { return p.heldFromStep.has_value(); }),
                    found.end());
    if (found.empty())
        return std::optional<Precursor>{};
    int64_t earliest = found.front().onsetStep;
    for (const Precursor& p : found)
        earliest = std::min(earliest, p.onsetStep);
    // Onsets this close tie: the knee of a slow drift moves by a few rows with the noise.
    const int64_t tie = std::max<int64_t>(3 * config.jumpSteps, (search.failureStep - earliest) / 20);
    const Precursor* best = nullptr;
    for (const Precursor& p : found) {
        if (p.onsetStep > earliest + tie)
            continue;
        if (!best) {
            best = &p;
            continue;
        }
        const auto key = [](const Precursor& q) {
            return std::make_tuple(q.nearLimit ? 0 : 1, sourceRank(q.source), -q.riseDecades, q.onsetStep);
        };
        if (key(p) < key(*best))
            best = &p;
    }
    return std::optional<Precursor>{*best};
}

} // namespace nanscope::scan
