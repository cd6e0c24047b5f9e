#include "core/scan/IncidentDetector.h"

#include "core/run/RunFormat.h"
#include "core/run/RunReader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace nanscope {

namespace {

namespace rf = runformat;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// log10 of an exact zero: below anything a float can hold, so zero gradients read as "vanished".
constexpr double kZeroLog = -46.0;
// Non-finite rows enter running medians as this: they are worse than any finite value.
constexpr double kNonfiniteLog = 1e300;
// A loss this much (x1.6) above its level before an explosion, for good, means a destroyed model.
constexpr double kDeadLossDecades = 0.2;
// Known fill and saturation values of data pipelines (int16, uint16, "missing" fills).
constexpr double kSentinels[] = {32767.0, 32768.0, 65535.0, 99999.0, 999999.0, 9999999.0, 99999999.0,
                                 999999999.0, 3.4028234663852886e38};

// ---------------------------------------------------------------------------------------------
// Small robust statistics

// Reorders `values`. The hot paths (running medians) use it on scratch buffers.
double medianInPlace(std::vector<double>& values)
{
    if (values.empty())
        return std::numeric_limits<double>::quiet_NaN();
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    double m = values[mid];
    if (values.size() % 2 == 0) {
        const double below = *std::max_element(values.begin(), values.begin() + mid);
        m = (m >= 1e300 || below >= 1e300) ? std::max(m, below) : 0.5 * (m + below);
    }
    return m;
}

double medianOf(std::vector<double> values)
{
    if (values.empty())
        return kNaN;
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    double m = values[mid];
    if (values.size() % 2 == 0) {
        const double below = *std::max_element(values.begin(), values.begin() + mid);
        m = (m >= kNonfiniteLog || below >= kNonfiniteLog) ? std::max(m, below) : 0.5 * (m + below);
    }
    return m;
}

// Theil-Sen slope of y over x, on at most ~120 evenly picked points so it stays cheap.
double theilSenSlope(const std::vector<double>& x, const std::vector<double>& y)
{
    const size_t n = x.size();
    if (n < 2)
        return kNaN;
    const size_t stride = std::max<size_t>(1, n / 120);
    std::vector<double> slopes;
    for (size_t i = 0; i < n; i += stride)
        for (size_t j = i + stride; j < n; j += stride)
            if (x[j] != x[i])
                slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    return medianOf(std::move(slopes));
}

// log10 for the streaming pass: exponent bits plus a quadratic for the mantissa, within ~0.004
// decades, several times faster than std::log10 on a hundred million values.
inline float fastLog10Bits(uint32_t bits)
{
    const float exponent = float(int((bits >> 23) & 0xFF) - 127);
    bits = (bits & 0x007FFFFFu) | 0x3F800000u;
    float m;
    std::memcpy(&m, &bits, sizeof m);
    const float log2m = (-0.34484843f * m + 2.02466578f) * m - 0.67487759f;
    return (exponent + log2m) * 0.30102999566f;
}

inline float fastLog10(float x)
{
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return fastLog10Bits(bits);
}

// One row of a [n, L] float table into per-column tallies: non-finite values are skipped, zeros
// counted, the others' log10 summed. Works on the bits with no branches, so the compiler
// vectorises it: this loop sees every value of the largest dataset in a run.
void accumulateRow(const uint32_t* __restrict row, size_t width, float* __restrict sums,
                   int32_t* __restrict counted, int32_t* __restrict zeros, int32_t* __restrict positive)
{
    for (size_t l = 0; l < width; ++l) {
        const uint32_t magnitude = row[l] & 0x7FFFFFFFu;             // |v|
        const uint32_t finite = magnitude < 0x7F800000u;            // exponent not all ones
        const uint32_t zero = magnitude == 0u;
        const uint32_t usable = finite & (1u - zero);
        const uint32_t mask = 0u - usable;                          // all ones when usable
        const uint32_t argument = (magnitude & mask) | (0x3F800000u & ~mask); // 1.0f otherwise: log 0
        counted[l] += int32_t(finite);
        zeros[l] += int32_t(zero);
        positive[l] += int32_t(usable);
        sums[l] += fastLog10Bits(argument);
    }
}

// ---------------------------------------------------------------------------------------------
// A series on a log10 scale, the scale every "how much worse" here is measured on.

struct LogSeries
{
    std::vector<int64_t> steps;
    std::vector<double> log; // log10|value|; kZeroLog for 0; unused where !finite
    std::vector<uint8_t> finite;
    std::vector<double> raw;

    size_t size() const { return steps.size(); }
    bool empty() const { return steps.empty(); }
    double at(size_t row) const { return finite[row] ? log[row] : kNonfiniteLog; }
};

double log10Abs(double v)
{
    const double a = std::fabs(v);
    return a > 0 ? std::log10(a) : kZeroLog;
}

LogSeries makeLogSeries(const std::vector<int64_t>& steps, const std::vector<double>& values)
{
    LogSeries s;
    const size_t n = std::min(steps.size(), values.size());
    s.steps.assign(steps.begin(), steps.begin() + n);
    s.raw.assign(values.begin(), values.begin() + n);
    s.log.resize(n);
    s.finite.resize(n);
    for (size_t i = 0; i < n; ++i) {
        s.finite[i] = std::isfinite(values[i]);
        s.log[i] = s.finite[i] ? log10Abs(values[i]) : kNaN;
    }
    return s;
}

size_t rowAtOrAfter(const std::vector<int64_t>& steps, int64_t step)
{
    return size_t(std::lower_bound(steps.begin(), steps.end(), step) - steps.begin());
}

size_t rowAfter(const std::vector<int64_t>& steps, int64_t step)
{
    return size_t(std::upper_bound(steps.begin(), steps.end(), step) - steps.begin());
}

// Centred running median of rows [begin, end) with half-width h, looking at rows up to dataEnd so
// a failure right after `end` still counts. Non-finite rows count as worse than anything.
std::vector<double> smoothed(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    std::vector<double> out;
    out.reserve(end - begin);
    std::vector<double> window;
    for (size_t i = begin; i < end; ++i) {
        window.clear();
        const size_t lo = i >= begin + size_t(h) ? i - size_t(h) : begin;
        const size_t hi = std::min(s.size(), i + size_t(h) + 1);
        for (size_t j = lo; j < hi; ++j)
            window.push_back(s.at(j));
        out.push_back(medianInPlace(window));
    }
    return out;
}

// Where a rise that ends in a failure at row f began. The baseline is the median before the
// onset, the noise is the spread of the smoothed curve there, and the onset is the row after the
// last one where the smoothed curve was still within the noise of the baseline. Iterated, since
// baseline and onset depend on each other.
struct Rise
{
    size_t onsetRow = 0;
    double baseline = kNaN; // log10
    double delta = 0;       // decades above the baseline that count as "worse"
};

// Trailing running mean over the 2h + 1 rows up to and including each row: it sees a rise made
// of growing spikes that the median still ignores, and, looking only back, it cannot see a jump
// before it happens. A non-finite row makes the windows that hold it "worse than anything".
std::vector<double> trailingMean(const LogSeries& s, size_t begin, size_t end, int64_t h)
{
    std::vector<double> out;
    out.reserve(end - begin);
    const size_t width = size_t(2 * h + 1);
    for (size_t i = begin; i < end; ++i) {
        const size_t lo = i + 1 >= begin + width ? i + 1 - width : begin;
        double sum = 0;
        bool nonfinite = false;
        for (size_t j = lo; j <= i; ++j) {
            nonfinite = nonfinite || !s.finite[j];
            sum += s.finite[j] ? s.log[j] : 0.0;
        }
        out.push_back(nonfinite ? kNonfiniteLog : sum / double(i + 1 - lo));
    }
    return out;
}

Rise findOnset(const LogSeries& s, size_t a, size_t f, const ScanConfig& config)
{
    Rise rise;
    rise.onsetRow = f;
    if (f <= a)
        return rise;
    const int64_t h = std::max<int64_t>(0, config.smoothingRows);
    const std::vector<double> m = smoothed(s, a, f, h);
    std::vector<double> finiteSmooth;
    for (double v : m)
        if (v < kNonfiniteLog)
            finiteSmooth.push_back(v);
    if (finiteSmooth.empty())
        return rise;
    const std::vector<double> mean = trailingMean(s, a, f, h);
    // At baseline: both the median and the mean of the window are within the noise band.
    auto walkBack = [&](double threshold) {
        for (size_t i = f; i-- > a;)
            if (m[i - a] <= threshold && mean[i - a] <= threshold)
                return i + 1;
        return a;
    };
    // First guess: a low quantile of the smoothed curve is baseline as long as the rise takes
    // less than three quarters of the window.
    const size_t quarter = finiteSmooth.size() / 4;
    std::nth_element(finiteSmooth.begin(), finiteSmooth.begin() + quarter, finiteSmooth.end());
    double baseline = finiteSmooth[quarter];
    double delta = config.minOnsetDecades;
    size_t onset = walkBack(baseline + delta);
    for (int iteration = 0; iteration < 4; ++iteration) {
        // The smoothed curve already sees the rise h rows early: keep those rows out. The baseline
        // is the level just before the onset (learning-rate schedules move it over a run); the
        // noise is the row-to-row scatter around the smoothed curve, scaled to the smoothed curve.
        const size_t referenceEnd = onset >= a + size_t(h) ? onset - size_t(h) : a;
        const size_t referenceBegin =
            referenceEnd >= a + size_t(config.baselineRows) ? referenceEnd - size_t(config.baselineRows) : a;
        std::vector<double> reference, residuals;
        for (size_t i = referenceBegin; i < referenceEnd; ++i)
            if (s.finite[i]) {
                reference.push_back(s.log[i]);
                if (m[i - a] < kNonfiniteLog)
                    residuals.push_back(std::fabs(s.log[i] - m[i - a]));
            }
        if (reference.size() < 5)
            break;
        baseline = medianOf(reference);
        const double rawNoise = 1.4826 * medianOf(residuals);
        const double smoothNoise = rawNoise * 1.25 / std::sqrt(double(2 * h + 1));
        delta = std::max(config.noiseSigmas * smoothNoise, config.minOnsetDecades);
        const size_t next = walkBack(baseline + delta);
        if (next == onset)
            break;
        onset = next;
    }
    // At a step edge the centred median is the largest of the quiet values and can cross the
    // threshold a row or two early: the onset is the first row whose own value is above it too.
    const size_t limit = std::min(f, onset + size_t(h));
    while (onset < limit && s.finite[onset] && s.log[onset] <= baseline + delta)
        ++onset;
    rise.onsetRow = onset;
    rise.baseline = baseline;
    rise.delta = delta;
    return rise;
}

// ---------------------------------------------------------------------------------------------
// Layer blame

struct LayerColumn
{
    std::string name;
    std::string source;
    int position = 0; // forward-pass order: activations and parameters of one module sit together
    LogSeries series;
};

// Forward-pass position of a parameter or module: the module's index among the activations
// (the forward order), parameters right after their module's output.
class ForwardOrder
{
public:
    ForwardOrder(const TableInfo* activations, const TableInfo* layers)
    {
        if (activations)
            for (size_t i = 0; i < activations->names.size(); ++i)
                m_modules.emplace(activations->names[i], int(i));
        if (layers)
            for (size_t i = 0; i < layers->names.size(); ++i)
                m_parameters.emplace(layers->names[i], int(i));
    }

    int module(const std::string& name) const
    {
        auto it = m_modules.find(name);
        return it != m_modules.end() ? 2 * it->second * kSpread : 2 * kSpread * int(m_modules.size());
    }

    int parameter(const std::string& name) const
    {
        const auto dot = name.rfind('.');
        const int index = m_parameters.count(name) ? m_parameters.at(name) : 0;
        if (dot != std::string::npos) {
            auto it = m_modules.find(name.substr(0, dot));
            if (it != m_modules.end())
                return 2 * it->second * kSpread + 1 + index % kSpread;
        }
        // A module without logged activations: keep parameter order, after the known modules.
        return 2 * kSpread * int(m_modules.size()) + index;
    }

private:
    static constexpr int kSpread = 1 << 12;
    std::map<std::string, int> m_modules;
    std::map<std::string, int> m_parameters;
};

// First bad first: earliest onset; at the same step the larger magnitude, except that magnitudes
// within tieDecades of each other are a tie, and then the layer earlier in the forward pass
// comes first (within one step, the forward pass is the order in which values were computed).
void orderLayerOnsets(std::vector<std::pair<LayerOnset, int>>& onsets, double tieDecades)
{
    std::sort(onsets.begin(), onsets.end(), [](const auto& x, const auto& y) {
        if (x.first.onsetStep != y.first.onsetStep)
            return x.first.onsetStep < y.first.onsetStep;
        if (x.first.magnitudeDecades != y.first.magnitudeDecades)
            return x.first.magnitudeDecades > y.first.magnitudeDecades;
        return x.second < y.second;
    });
    size_t i = 0;
    while (i < onsets.size()) {
        size_t j = i + 1;
        const double top = onsets[i].first.magnitudeDecades;
        while (j < onsets.size() && onsets[j].first.onsetStep == onsets[i].first.onsetStep &&
               (onsets[j].first.magnitudeDecades == top || top - onsets[j].first.magnitudeDecades <= tieDecades))
            ++j;
        std::sort(onsets.begin() + i, onsets.begin() + j,
                  [](const auto& x, const auto& y) { return x.second < y.second; });
        i = j;
    }
}

// ---------------------------------------------------------------------------------------------

struct Burst
{
    size_t firstRow = 0;
    size_t lastRow = 0;
    int64_t count = 0;
};

std::string formatNumber(double v, int precision = 3)
{
    std::ostringstream out;
    out.precision(precision);
    out << v;
    return out.str();
}

std::string joinNames(const std::vector<std::string>& names, size_t limit = 3)
{
    std::string out;
    for (size_t i = 0; i < names.size() && i < limit; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > limit)
        out += " and " + std::to_string(names.size() - limit) + " more";
    return out;
}

class Detector
{
public:
    Detector(const RunReader& reader, const ScanConfig& config, const ProgressCallback& progress)
        : m_reader(reader)
        , m_config(config)
        , m_progress(progress)
        , m_order(reader.table(rf::kActivations), reader.table(rf::kLayers))
    {
        m_config.blockRows = std::max<int64_t>(128, (m_config.blockRows + 127) / 128 * 128);
        m_config.smoothingRows = std::max<int64_t>(0, m_config.smoothingRows);
    }

    Result<ScanReport> run()
    {
        const RunInfo& info = m_reader.info();
        m_report.runName = info.runName;
        m_report.directory = info.directory;
        auto amp = info.attributes.find("amp_dtype");
        m_fp16 = amp != info.attributes.end() && amp->second == "float16";

        if (Status s = loadScalars(); !s)
            return Error{s.error()};
        if (m_scalarSteps.empty()) {
            m_report.notes.push_back("the run has no logged steps yet");
            return m_report;
        }
        if (!m_reader.table(rf::kLayers))
            m_report.notes.push_back("no /layers: incidents cannot name parameters, vanishing gradients are not checked");
        if (!m_reader.table(rf::kActivations))
            m_report.notes.push_back("no /activations: the module that produced a NaN cannot be named");
        if (!m_reader.table(rf::kInputs))
            m_report.notes.push_back("no /inputs: bad input batches cannot be seen");
        m_report.firstStep = m_scalarSteps.front();
        m_report.lastStep = m_scalarSteps.back();
        if (!progressed(0.05, "scalars"))
            return cancelled();

        // Order matters: inputs and buffers first, so that blow-ups and NaN bursts can name them
        // as causes; the blow-up before spikes and vanishing, which must not look inside it.
        if (Status s = detectBadInputs(); !s)
            return Error{s.error()};
        if (Status s = detectBnCorruption(); !s)
            return Error{s.error()};
        if (!progressed(0.1, "inputs and buffers"))
            return cancelled();
        if (Status s = detectNonfiniteAndBlowup(); !s)
            return Error{s.error()};
        if (!progressed(0.2, "blow-ups"))
            return cancelled();
        detectSpikes();
        detectLossScaleCollapse();
        detectSkippedSteps();
        if (Status s = detectVanishing(); !s)
            return Error{s.error()};
        if (m_cancelled)
            return cancelled();
        sortIncidents();
        progressed(1.0, "done");
        return m_report;
    }

private:
    Error cancelled() const { return Error{"scan of " + m_reader.info().directory + " cancelled"}; }

    bool progressed(double fraction, const std::string& what)
    {
        if (!reportProgress(m_progress, fraction, what))
            m_cancelled = true;
        return !m_cancelled;
    }

    bool hasDataset(const char* table, const char* dataset) const
    {
        const TableInfo* t = m_reader.table(table);
        return t && t->rows > 0 &&
               std::find(t->datasets.begin(), t->datasets.end(), dataset) != t->datasets.end();
    }

    Result<std::vector<double>> scalar(const char* name) const
    {
        if (!hasDataset(rf::kScalars, name))
            return std::vector<double>{};
        return m_reader.readSeries(rf::kScalars, name);
    }

    Status loadScalars()
    {
        const TableInfo* scalars = m_reader.table(rf::kScalars);
        if (!scalars)
            return Error{m_reader.info().logPath + ": no /scalars table"};
        m_scalarSteps = m_reader.steps(rf::kScalars);
        m_scalarSteps.resize(std::min<size_t>(m_scalarSteps.size(), size_t(scalars->rows)));
        auto load = [&](const char* name, std::vector<double>& into) -> Status {
            auto values = scalar(name);
            if (!values)
                return Error{values.error()};
            into = std::move(*values);
            if (!into.empty())
                into.resize(m_scalarSteps.size(), kNaN);
            return Status::success();
        };
        std::vector<double> loss, gradNorm;
        for (auto [name, into] : {std::pair<const char*, std::vector<double>*>{"loss", &loss},
                                  {"grad_norm", &gradNorm},
                                  {"skipped", &m_skipped},
                                  {"loss_scale", &m_lossScale},
                                  {"eval_loss", &m_evalLoss},
                                  {"lr", &m_lr}})
            if (Status s = load(name, *into); !s)
                return s;
        m_loss = makeLogSeries(m_scalarSteps, loss);
        if (!gradNorm.empty()) {
            m_gradNorm = makeLogSeries(m_scalarSteps, gradNorm);
            m_primaryName = "scalars/grad_norm";
        } else {
            m_report.notes.push_back("no /scalars/grad_norm: blow-ups are found on the loss alone");
            m_primaryName = "scalars/loss";
        }
        // Skipped steps and loss-scale decreases from events when the scalars are missing.
        // (RunReader lists no string datasets for /events: ask for the table, not the dataset.)
        const TableInfo* events = m_reader.table(rf::kEvents);
        if ((m_skipped.empty() || m_lossScale.empty()) && events && events->rows > 0) {
            auto kinds = m_reader.readStrings(rf::kEvents, "kind");
            const auto& eventSteps = m_reader.steps(rf::kEvents);
            const bool skippedFromEvents = m_skipped.empty();
            const bool scaleFromEvents = m_lossScale.empty();
            std::vector<uint8_t> decreased(m_scalarSteps.size(), 0);
            bool anyDecrease = false;
            if (kinds) {
                if (skippedFromEvents)
                    m_skipped.assign(m_scalarSteps.size(), 0.0);
                for (size_t i = 0; i < kinds->size() && i < eventSteps.size(); ++i) {
                    const size_t row = rowAtOrAfter(m_scalarSteps, eventSteps[i]);
                    if (row >= m_scalarSteps.size() || m_scalarSteps[row] != eventSteps[i])
                        continue;
                    if (skippedFromEvents && (*kinds)[i] == "skipped_step")
                        m_skipped[row] = 1.0;
                    if (scaleFromEvents && (*kinds)[i] == "loss_scale_decrease")
                        decreased[row] = anyDecrease = true;
                }
            }
            // A stand-in scale that halves at each decrease: enough to see a cascade (its floor
            // is unknown, so only the warm-up rule tells cascades from the start-up search).
            if (anyDecrease) {
                double scale = 65536.0;
                for (uint8_t d : decreased)
                    m_lossScale.push_back(scale = d ? scale / 2 : scale);
                m_lossScaleFromEvents = true;
            }
        }
        return Status::success();
    }

    const LogSeries& primary() const { return m_gradNorm.empty() ? m_loss : m_gradNorm; }

    bool rowNonfinite(size_t row) const
    {
        return !m_loss.finite[row] || (!m_gradNorm.empty() && !m_gradNorm.finite[row]);
    }

    bool skippedAt(size_t row) const { return row < m_skipped.size() && m_skipped[row] > 0.5; }

    std::string batchNote(int64_t step) const
    {
        const auto& batches = m_reader.info().batches;
        const auto& checkpoints = m_reader.info().checkpoints;
        auto batch = batches.find(step);
        if (batch == batches.end())
            return "";
        std::string note = " The batch of step " + std::to_string(step) + " was saved (batches/" +
                           batch->second.substr(batch->second.find_last_of('/') + 1) + ")";
        auto checkpoint = checkpoints.upper_bound(step);
        if (checkpoint != checkpoints.begin()) {
            --checkpoint;
            note += "; replay it from checkpoint step " + std::to_string(checkpoint->first);
        }
        return note + ".";
    }

    // ---- inputs ---------------------------------------------------------------------------

    Status detectBadInputs()
    {
        const TableInfo* inputs = m_reader.table(rf::kInputs);
        if (!inputs || inputs->rows == 0 || inputs->names.empty())
            return Status::success();
        const auto& steps = m_reader.steps(rf::kInputs);
        const size_t rows = std::min<size_t>(steps.size(), size_t(inputs->rows));
        struct BadRow
        {
            size_t row;
            bool nonfinite;
            double magnitude;
            double typical; // log10
            std::string input;
            std::string note;
        };
        std::vector<BadRow> bad;
        // A handful of inputs: their columns, n floats each, read in row blocks (a column read
        // of a chunked table touches every chunk once per column).
        const size_t width = inputs->names.size();
        std::map<std::string, std::vector<std::vector<float>>> columns;
        for (const char* dataset : {"nan", "inf", "min", "max"}) {
            if (!hasDataset(rf::kInputs, dataset))
                continue;
            auto& perColumn = columns[dataset];
            perColumn.assign(width, std::vector<float>(rows, 0.f));
            for (int64_t begin = 0; begin < int64_t(rows); begin += m_config.blockRows) {
                const int64_t count = std::min<int64_t>(m_config.blockRows, int64_t(rows) - begin);
                auto block = m_reader.readBlock(rf::kInputs, dataset, begin, count);
                if (!block)
                    return Error{block.error()};
                for (int64_t r = 0; r < count; ++r)
                    for (size_t c = 0; c < width; ++c)
                        perColumn[c][size_t(begin + r)] = (*block)[size_t(r) * width + c];
            }
        }
        for (size_t column = 0; column < width; ++column) {
            static const std::vector<float> none;
            auto get = [&](const char* dataset) -> const std::vector<float>& {
                auto it = columns.find(dataset);
                return it == columns.end() ? none : it->second[column];
            };
            const std::vector<float>& nan = get("nan");
            const std::vector<float>& inf = get("inf");
            const std::vector<float>& lo = get("min");
            const std::vector<float>& hi = get("max");
            std::vector<double> magnitudes(rows, kNaN);
            std::vector<double> logs;
            for (size_t r = 0; r < rows; ++r) {
                double m = 0;
                bool any = false;
                for (const auto* v : {&lo, &hi})
                    if (!v->empty() && std::isfinite((*v)[r])) {
                        m = std::max(m, std::fabs(double((*v)[r])));
                        any = true;
                    }
                if (any) {
                    magnitudes[r] = m;
                    logs.push_back(log10Abs(m));
                }
            }
            const double typical = medianOf(logs);
            for (size_t r = 0; r < rows; ++r) {
                const bool nonfinite = (!nan.empty() && nan[r] > 0) || (!inf.empty() && inf[r] > 0);
                const double m = magnitudes[r];
                std::string note;
                bool extreme = false;
                if (std::isfinite(m) && std::isfinite(typical) && log10Abs(m) - typical >= m_config.inputDecades) {
                    extreme = true;
                    note = "largest magnitude " + formatNumber(m, 10);
                    for (double sentinel : kSentinels)
                        if (std::fabs(m - sentinel) <= 1e-6 * sentinel)
                            note += ", the fill or saturation value " + formatNumber(sentinel, 10);
                    note += "; typically " + formatNumber(std::pow(10.0, typical));
                }
                if (nonfinite || extreme)
                    bad.push_back({r, nonfinite, m, typical, inputs->names[column], note});
            }
        }
        std::sort(bad.begin(), bad.end(), [](const BadRow& x, const BadRow& y) { return x.row < y.row; });
        size_t i = 0;
        while (i < bad.size()) {
            size_t j = i + 1;
            while (j < bad.size() && steps[bad[j].row] - steps[bad[j - 1].row] <= m_config.burstGapSteps)
                ++j;
            Incident incident;
            incident.kind = IncidentKind::BadInput;
            incident.onsetStep = steps[bad[i].row];
            bool nonfinite = false;
            std::set<size_t> distinctRows;
            std::vector<std::string> names;
            double peak = 0;
            std::string note;
            for (size_t k = i; k < j; ++k) {
                nonfinite = nonfinite || bad[k].nonfinite;
                distinctRows.insert(bad[k].row);
                if (std::find(names.begin(), names.end(), bad[k].input) == names.end())
                    names.push_back(bad[k].input);
                if (std::isfinite(bad[k].magnitude))
                    peak = std::max(peak, bad[k].magnitude);
                if (note.empty())
                    note = bad[k].note;
                LayerOnset onset{bad[k].input, "inputs", steps[bad[k].row],
                                 bad[k].nonfinite ? kInf : log10Abs(bad[k].magnitude) - bad[k].typical, bad[k].nonfinite,
                                 bad[k].nonfinite ? std::optional<int64_t>(steps[bad[k].row]) : std::nullopt};
                if (incident.evidence.layerOnsets.size() < size_t(m_config.maxLayersListed))
                    incident.evidence.layerOnsets.push_back(onset);
            }
            incident.severity = nonfinite ? Severity::Critical : Severity::Warning;
            incident.layers = names;
            incident.evidence.series = nonfinite ? "inputs/nan, inputs/inf" : "inputs/min, inputs/max";
            incident.evidence.windowBeginStep = steps[bad[i].row];
            incident.evidence.windowEndStep = steps[bad[j - 1].row];
            incident.evidence.count = int64_t(distinctRows.size());
            if (peak > 0)
                incident.evidence.peak = peak;
            incident.evidence.note = note;
            const std::string where = distinctRows.size() == 1
                                          ? "the input batch of step " + std::to_string(incident.onsetStep)
                                          : std::to_string(distinctRows.size()) + " input batches from step " +
                                                std::to_string(incident.onsetStep);
            if (nonfinite)
                incident.cause = where + " holds NaN or Inf (" + joinNames(names) + "): dirty data.";
            else
                incident.cause = where + " holds extreme values (" + joinNames(names) + "; " + note + ").";
            if (incident.onsetStep <= m_report.firstStep + 1)
                incident.cause += " It is already in the first batch: the data itself is dirty.";
            incident.suggestion = "Inspect that batch and the records it came from; validate inputs in the data "
                                  "loader (torch.isfinite, range checks) and drop or repair bad records." +
                                  batchNote(incident.onsetStep);
            m_badInputs.push_back(incident);
            m_report.incidents.push_back(incident);
            i = j;
        }
        return Status::success();
    }

    const Incident* badInputNear(int64_t step, int64_t before, int64_t after) const
    {
        for (const auto& incident : m_badInputs)
            if (incident.evidence.windowEndStep >= step - before && incident.onsetStep <= step + after)
                return &incident;
        return nullptr;
    }

    // ---- normalisation buffers ------------------------------------------------------------

    Status detectBnCorruption()
    {
        const TableInfo* buffers = m_reader.table(rf::kBuffers);
        if (!buffers || buffers->rows == 0 || buffers->names.empty())
            return Status::success();
        const auto& steps = m_reader.steps(rf::kBuffers);
        const int64_t rows = std::min<int64_t>(int64_t(steps.size()), buffers->rows);
        const size_t width = buffers->names.size();
        const bool haveNonfinite = hasDataset(rf::kBuffers, "nonfinite");
        const bool haveVar = hasDataset(rf::kBuffers, "running_var_min");
        constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
        std::vector<int64_t> firstNonfinite(width, kNever), firstNegative(width, kNever), firstCollapse(width, kNever);
        std::vector<int64_t> nonfiniteRows(width, 0);
        std::vector<uint8_t> nonfiniteAtEnd(width, 0);
        std::vector<double> lowestVar(width, kInf);
        for (int64_t begin = 0; begin < rows; begin += m_config.blockRows) {
            const int64_t count = std::min(m_config.blockRows, rows - begin);
            std::vector<float> nonfinite, var;
            if (haveNonfinite) {
                auto block = m_reader.readBlock(rf::kBuffers, "nonfinite", begin, count);
                if (!block)
                    return Error{block.error()};
                nonfinite = std::move(*block);
            }
            if (haveVar) {
                auto block = m_reader.readBlock(rf::kBuffers, "running_var_min", begin, count);
                if (!block)
                    return Error{block.error()};
                var = std::move(*block);
            }
            // Fast path for the usual clean block: nothing non-finite, no variance at the floor.
            const double floor = m_config.runningVarFloor;
            bool clean = true;
            for (float v : nonfinite)
                clean &= !(v > 0);
            for (float v : var)
                clean &= !(v <= floor); // NaN (no finite element) passes, as below
            if (clean) {
                for (size_t b = 0; b < width; ++b)
                    nonfiniteAtEnd[b] = 0;
                for (size_t k = 0; k < var.size(); ++k)
                    if (std::isfinite(var[k]))
                        lowestVar[k % width] = std::min(lowestVar[k % width], double(var[k]));
                continue;
            }
            for (int64_t r = 0; r < count; ++r) {
                const int64_t step = steps[size_t(begin + r)];
                for (size_t b = 0; b < width; ++b) {
                    const size_t k = size_t(r) * width + b;
                    const bool bad = !nonfinite.empty() && nonfinite[k] > 0;
                    if (bad) {
                        firstNonfinite[b] = std::min(firstNonfinite[b], step);
                        ++nonfiniteRows[b];
                    }
                    nonfiniteAtEnd[b] = bad;
                    if (!var.empty() && std::isfinite(var[k])) {
                        lowestVar[b] = std::min(lowestVar[b], double(var[k]));
                        if (var[k] < 0)
                            firstNegative[b] = std::min(firstNegative[b], step);
                        else if (var[k] <= m_config.runningVarFloor)
                            firstCollapse[b] = std::min(firstCollapse[b], step);
                    }
                }
            }
        }
        // The evaluation loss is what users see of broken running statistics.
        auto evalBrokenAfter = [&](int64_t step) -> std::pair<int64_t, bool> {
            if (m_evalLoss.empty())
                return {-1, false};
            int64_t evalNan = 0, trainFinite = 0, rowsAfter = 0;
            for (size_t r = rowAtOrAfter(m_scalarSteps, step); r < m_scalarSteps.size(); ++r) {
                ++rowsAfter;
                evalNan += !std::isfinite(m_evalLoss[r]);
                trainFinite += m_loss.finite[r];
            }
            return {evalNan, rowsAfter > 0 && evalNan * 2 > rowsAfter && trainFinite * 2 > rowsAfter};
        };

        auto emit = [&](const std::vector<int64_t>& first, Severity severity, const std::string& what) {
            std::vector<std::pair<LayerOnset, int>> onsets;
            for (size_t b = 0; b < width; ++b)
                if (first[b] != kNever)
                    onsets.push_back({LayerOnset{buffers->names[b], "buffers", first[b],
                                                 &first == &firstNonfinite ? kInf : 0.0, &first == &firstNonfinite,
                                                 &first == &firstNonfinite ? std::optional<int64_t>(first[b]) : std::nullopt},
                                      m_order.module(buffers->names[b])});
            if (onsets.empty())
                return;
            orderLayerOnsets(onsets, m_config.tieDecades);
            Incident incident;
            incident.kind = IncidentKind::BnCorruption;
            incident.severity = severity;
            incident.onsetStep = onsets.front().first.onsetStep;
            for (const auto& [onset, position] : onsets) {
                incident.layers.push_back(onset.name);
                incident.evidence.layerOnsets.push_back(onset);
            }
            incident.evidence.windowBeginStep = incident.onsetStep;
            incident.evidence.windowEndStep = steps[size_t(rows - 1)];
            const std::string names = joinNames(incident.layers);
            incident.cause = "Running statistics of " + names + " " + what + " at step " +
                             std::to_string(incident.onsetStep) + ".";
            if (&first == &firstNonfinite) {
                int64_t count = 0;
                bool persistent = false;
                for (size_t b = 0; b < width; ++b) {
                    count = std::max(count, nonfiniteRows[b]);
                    persistent = persistent || nonfiniteAtEnd[b];
                }
                incident.evidence.series = "buffers/nonfinite";
                incident.evidence.count = count;
                if (persistent)
                    incident.cause += " They stay non-finite to the end of the log: every evaluation-mode forward "
                                      "pass through them gives NaN.";
                auto [evalNan, evalOnlyBroken] = evalBrokenAfter(incident.onsetStep);
                if (evalOnlyBroken) {
                    incident.cause += " The training loss stays finite while the evaluation loss is NaN (" +
                                      std::to_string(evalNan) +
                                      " evaluations): NaN in eval while training is fine is BatchNorm running "
                                      "statistics.";
                    incident.evidence.note = "eval_loss non-finite on " + std::to_string(evalNan) +
                                             " logged steps after the onset; training loss finite";
                }
                if (const Incident* input = badInputNear(incident.onsetStep, 1, 0); input && input->severity == Severity::Critical)
                    incident.cause += " The input batch of step " + std::to_string(input->onsetStep) +
                                      " held NaN: the training-mode forward pass folded it into the running "
                                      "statistics before the step was skipped.";
                else if (skippedAt(rowAtOrAfter(m_scalarSteps, incident.onsetStep)))
                    incident.cause += " That step was skipped, but the forward pass had already updated the running "
                                      "statistics.";
                incident.suggestion =
                    "Restore the normalisation buffers from a checkpoint before step " +
                    std::to_string(incident.onsetStep) +
                    " or reset them (reset_running_stats()) and re-estimate them on clean batches. Skipping the "
                    "optimizer step is not enough: check inputs and activations before the forward pass, or "
                    "save and restore the buffers when a step is skipped.";
            } else {
                incident.evidence.series = "buffers/running_var_min";
                double lowest = kInf;
                for (size_t b = 0; b < width; ++b)
                    if (first[b] != kNever)
                        lowest = std::min(lowest, lowestVar[b]);
                incident.evidence.peak = lowest;
                incident.evidence.note = "lowest running variance " + formatNumber(lowest);
                incident.suggestion = "A collapsed or negative running variance divides by ~eps in evaluation. Check "
                                      "for constant or dead channels feeding the layer, raise its eps, and reset the "
                                      "running statistics.";
            }
            m_report.incidents.push_back(incident);
        };
        emit(firstNonfinite, Severity::Critical, "became non-finite (NaN/Inf)");
        // A layer already non-finite says it all; negative and collapsed variances of the others.
        for (size_t b = 0; b < width; ++b)
            if (firstNonfinite[b] != kNever)
                firstNegative[b] = firstCollapse[b] = kNever;
        emit(firstNegative, Severity::Critical, "went negative (running_var < 0)");
        for (size_t b = 0; b < width; ++b)
            if (firstNegative[b] != kNever)
                firstCollapse[b] = kNever;
        emit(firstCollapse, Severity::Warning, "collapsed to ~0 (running_var <= " +
                                                   formatNumber(m_config.runningVarFloor) + ")");
        return Status::success();
    }

    // ---- non-finite bursts and blow-ups ---------------------------------------------------

    std::vector<Burst> nonfiniteBursts() const
    {
        std::vector<Burst> bursts;
        for (size_t row = 0; row < m_scalarSteps.size(); ++row) {
            if (!rowNonfinite(row))
                continue;
            if (!bursts.empty() && m_scalarSteps[row] - m_scalarSteps[bursts.back().lastRow] <= m_config.burstGapSteps) {
                bursts.back().lastRow = row;
                ++bursts.back().count;
            } else {
                bursts.push_back({row, row, 1});
            }
        }
        return bursts;
    }

    // Typical primary level before a row: median of the previous finite values.
    double levelBefore(size_t row) const
    {
        const LogSeries& s = primary();
        std::vector<double> values;
        for (size_t r = row; r-- > 0 && values.size() < size_t(m_config.spikeBaselineRows);)
            if (s.finite[r])
                values.push_back(s.log[r]);
        return medianOf(values);
    }

    bool recoveredAfter(const Burst& burst) const
    {
        const size_t begin = burst.lastRow + 1;
        const size_t end = std::min(m_scalarSteps.size(), begin + size_t(std::max<int64_t>(1, m_config.recoveryRows)));
        if (begin >= end) {
            // The log ends here: only the training's own word (a skipped step) says it went on.
            for (size_t r = burst.firstRow; r <= burst.lastRow; ++r)
                if (!skippedAt(r) && rowNonfinite(r))
                    return false;
            return true;
        }
        const LogSeries& s = primary();
        std::vector<double> after;
        for (size_t r = begin; r < end; ++r)
            if (!rowNonfinite(r))
                after.push_back(s.log[r]);
        if (after.size() * 2 < end - begin)
            return false;
        const double before = levelBefore(burst.firstRow);
        return !std::isfinite(before) || medianOf(after) <= before + m_config.recoveryDecades;
    }

    // A NaN that comes at the end of a finite explosion is that explosion's failure, even when
    // the numbers look finite again afterwards: the weights it left behind are destroyed.
    bool explodedBefore(const Burst& burst) const
    {
        const LogSeries& s = primary();
        const size_t lead = size_t(std::max<int64_t>(m_config.jumpSteps, 2 * m_config.smoothingRows + 1));
        const size_t from = burst.firstRow >= lead ? burst.firstRow - lead : 0;
        const double before = levelBefore(from);
        double peak = -kInf;
        for (size_t r = from; r < burst.firstRow; ++r)
            if (s.finite[r])
                peak = std::max(peak, s.log[r]);
        return std::isfinite(before) && std::isfinite(peak) && peak - before >= m_config.blowupDecades;
    }

    // A finite explosion of blow-up size after which the gradient norm looks normal again but
    // the loss never comes back: the update destroyed the weights (dead units, a collapsed
    // output). Returns the note and the first row after the explosion.
    std::optional<std::pair<std::string, size_t>> destroyedByExplosion() const
    {
        const LogSeries& s = primary();
        const size_t settle = size_t(std::max<int64_t>(1, m_config.recoveryRows));
        for (size_t r = 1; r < s.size(); ++r) {
            if (!s.finite[r] || excludedFromSpikes(r))
                continue;
            const double before = levelBefore(r);
            if (!(s.log[r] - before >= m_config.blowupDecades))
                continue;
            size_t end = r;
            while (end < s.size() && (!s.finite[end] || s.log[end] - before >= m_config.jumpDecades))
                ++end;
            auto lossMedian = [&](size_t from, size_t to) {
                std::vector<double> v;
                for (size_t k = from; k < to && k < m_loss.size(); ++k)
                    if (m_loss.finite[k] && m_loss.raw[k] > 0)
                        v.push_back(m_loss.log[k]);
                return v.size() >= 5 ? medianOf(v) : kNaN;
            };
            const double lossBefore = lossMedian(r > 20 ? r - 20 : 0, r);
            const double lossAfter = lossMedian(end + settle, end + 3 * settle);
            if (std::isfinite(lossBefore) && std::isfinite(lossAfter) && lossAfter - lossBefore >= kDeadLossDecades)
                return std::make_pair("the gradient norm came back but the loss did not (" +
                                          formatNumber(std::pow(10.0, lossAfter)) + " after, " +
                                          formatNumber(std::pow(10.0, lossBefore)) +
                                          " before): the update destroyed the weights",
                                      end);
            r = end;
        }
        return std::nullopt;
    }

    Status detectNonfiniteAndBlowup()
    {
        const std::vector<Burst> bursts = nonfiniteBursts();
        size_t failureRow = m_scalarSteps.size();
        for (const Burst& burst : bursts) {
            if (recoveredAfter(burst) && !explodedBefore(burst)) {
                if (Status s = reportNonfiniteBurst(burst); !s)
                    return s;
                continue;
            }
            failureRow = burst.firstRow;
            break;
        }
        const LogSeries& s = primary();
        bool terminalNonfinite = failureRow < m_scalarSteps.size();
        Severity severity = Severity::Critical;
        std::string note;
        if (!terminalNonfinite) {
            if (auto destroyed = destroyedByExplosion())
                return reportBlowup(destroyed->second, false, Severity::Critical, destroyed->first,
                                    destroyed->second > 0 ? destroyed->second - 1 : 0);
        }
        if (!terminalNonfinite) {
            // No NaN, but a rise of orders of magnitude that does not come back.
            const size_t n = s.size();
            const size_t tail = size_t(2 * m_config.smoothingRows + 1);
            if (n < 4 * tail)
                return Status::success();
            const size_t lookbackBegin = rowAtOrAfter(m_scalarSteps, m_scalarSteps.back() - m_config.lookbackSteps);
            std::vector<double> tailLogs, early;
            for (size_t r = n - tail; r < n; ++r)
                if (s.finite[r])
                    tailLogs.push_back(s.log[r]);
            const size_t earlyEnd = lookbackBegin + (n - lookbackBegin) / 2;
            for (size_t r = lookbackBegin; r < earlyEnd; ++r)
                if (s.finite[r])
                    early.push_back(s.log[r]);
            const double reference = medianOf(early);
            const double rise = medianOf(tailLogs) - reference;
            // The last rows all far above the reference: a run cut short (or still being written)
            // in the middle of its blow-up, too few rows yet for the tail median to show it.
            size_t stretch = n;
            while (stretch > earlyEnd && s.finite[stretch - 1] && s.log[stretch - 1] - reference >= m_config.blowupDecades)
                --stretch;
            if (n - stretch >= 2 && !(rise >= m_config.blowupDecades)) {
                note = "the log ends " + std::to_string(n - stretch) + " rows into the blow-up (cut short or still "
                       "being written)";
                return reportBlowup(stretch, false, Severity::Critical, note);
            }
            if (!(rise >= m_config.blowupDecades)) {
                // A large rise still going on at the end of a run being written (or cut short).
                std::vector<double> x, y;
                for (size_t r = n - tail; r < n; ++r)
                    if (s.finite[r]) {
                        x.push_back(double(m_scalarSteps[r]));
                        y.push_back(s.log[r]);
                    }
                if (!(rise >= std::max(m_config.jumpDecades, m_config.blowupDecades - 1.0)) ||
                    !(theilSenSlope(x, y) > 0))
                    return Status::success();
                severity = Severity::Warning;
                note = "still rising at the end of the log (" + formatNumber(rise, 2) + " decades so far)";
            }
            const double halfway = reference + 0.5 * rise;
            const std::vector<double> m = smoothed(s, lookbackBegin, n, m_config.smoothingRows);
            failureRow = lookbackBegin;
            for (size_t r = n; r-- > lookbackBegin;)
                if (m[r - lookbackBegin] < halfway) {
                    failureRow = r + 1;
                    break;
                }
            if (failureRow >= n)
                failureRow = n - 1;
        }
        return reportBlowup(failureRow, terminalNonfinite, severity, note);
    }

    Status reportBlowup(size_t failureRow, bool terminalNonfinite, Severity severity, const std::string& note,
                        std::optional<size_t> endRowOverride = std::nullopt)
    {
        const LogSeries& s = primary();
        const int64_t failureStep = m_scalarSteps[failureRow];
        size_t windowBegin = rowAtOrAfter(m_scalarSteps, failureStep - m_config.lookbackSteps);
        // Do not look back past an earlier incident's burst: it is not the baseline.
        if (m_lastBurstEndRow && *m_lastBurstEndRow + 1 > windowBegin && *m_lastBurstEndRow + 1 < failureRow)
            windowBegin = *m_lastBurstEndRow + 1;
        const size_t lastRow = std::min(s.size() - 1, endRowOverride ? *endRowOverride
                                                      : terminalNonfinite ? failureRow
                                                                          : s.size() - 1);
        // First the sudden case, read directly: one step up by jump_decades (or into NaN) near
        // the failure that stays up until it, from a level that was still the baseline. Noise and
        // small level shifts just before such a jump must not move its onset.
        // ... and no rise began well before it (a gradual blow-up can end in a jump).
        const Rise rise = findOnset(s, windowBegin, failureRow, m_config);
        bool sudden = false;
        size_t onsetRow = failureRow;
        double baseline = kNaN;
        const size_t h = size_t(m_config.smoothingRows);
        const size_t searchFrom = std::max(windowBegin + 1, failureRow > 20 ? failureRow - 20 : size_t(1));
        for (size_t r = searchFrom; r <= lastRow && r < s.size() && !sudden; ++r) {
            if (!s.finite[r - 1])
                continue;
            const double before = s.log[r - 1];
            if (s.finite[r] && s.log[r] - before < m_config.jumpDecades)
                continue;
            bool sustained = true;
            for (size_t k = r; k <= lastRow && k < s.size() && sustained; ++k)
                sustained = !s.finite[k] || s.log[k] - before >= m_config.jumpDecades;
            if (!sustained || r < windowBegin + h + 6 || rise.onsetRow + 2 * h < r)
                continue;
            std::vector<double> pre, reference;
            for (size_t k = r - h - 1; k < r; ++k)
                if (s.finite[k])
                    pre.push_back(s.log[k]);
            const size_t referenceEnd = r - h - 1;
            const size_t referenceBegin = referenceEnd >= windowBegin + size_t(m_config.baselineRows)
                                              ? referenceEnd - size_t(m_config.baselineRows)
                                              : windowBegin;
            for (size_t k = referenceBegin; k < referenceEnd; ++k)
                if (s.finite[k])
                    reference.push_back(s.log[k]);
            if (pre.empty() || reference.size() < 5)
                continue;
            const double level = medianOf(reference);
            std::vector<double> deviations;
            for (double v : reference)
                deviations.push_back(std::fabs(v - level));
            const double noise = 1.4826 * medianOf(deviations);
            // The rows just before the jump were still at the baseline (within half a jump, or
            // the noise of their median): nothing was growing yet.
            if (medianOf(pre) - level <=
                std::max(0.5 * m_config.jumpDecades, m_config.noiseSigmas * noise / std::sqrt(double(pre.size())))) {
                sudden = true;
                onsetRow = r;
                baseline = level;
            }
        }
        if (!sudden) {
            onsetRow = std::min(rise.onsetRow, failureRow);
            baseline = rise.baseline;
        }
        const int64_t onsetStep = m_scalarSteps[onsetRow];

        Incident incident;
        incident.kind = IncidentKind::Blowup;
        incident.severity = severity;
        incident.onsetStep = onsetStep;
        auto& evidence = incident.evidence;
        evidence.series = m_primaryName;
        evidence.windowBeginStep = onsetStep;
        evidence.note = note;
        if (std::isfinite(baseline))
            evidence.baseline = std::pow(10.0, baseline);

        // Not a sustained one-step jump from the baseline: a gradual blow-up (steady exponential
        // growth, or an escalation of spikes that come and go on the way up).
        incident.pattern = sudden ? BlowupPattern::Sudden : BlowupPattern::Gradual;

        const size_t endRow = lastRow;
        double peak = -kInf;
        double jumpPeak = -kInf;
        std::vector<double> x, y;
        for (size_t r = onsetRow; r <= endRow && r < s.size(); ++r) {
            if (!s.finite[r])
                continue;
            peak = std::max(peak, s.log[r]);
            if (m_scalarSteps[r] - onsetStep <= m_config.jumpSteps)
                jumpPeak = std::max(jumpPeak, s.log[r]);
            x.push_back(double(m_scalarSteps[r]));
            y.push_back(s.log[r]);
        }
        if (std::isfinite(peak))
            evidence.peak = std::pow(10.0, peak);
        if (std::isfinite(baseline)) {
            const double top = sudden ? jumpPeak : peak;
            if (std::isfinite(top))
                evidence.jumpRatio = std::pow(10.0, top - baseline);
        }
        // The growth before the failure; a lone point (sudden jump straight to NaN) has no slope.
        if (x.size() >= 2) {
            evidence.growthDecadesPerStep = theilSenSlope(x, y);
        } else if (x.size() == 1 && std::isfinite(baseline) && m_scalarSteps[endRow] > onsetStep) {
            evidence.growthDecadesPerStep = (y[0] - baseline) / double(m_scalarSteps[endRow] - onsetStep);
        }

        // Non-finite step: first NaN/Inf in the loss, the grad norm, or any layer in the window.
        std::optional<int64_t> nonfiniteStep;
        for (size_t r = onsetRow; r < m_scalarSteps.size(); ++r)
            if (rowNonfinite(r)) {
                nonfiniteStep = m_scalarSteps[r];
                break;
            }
        const int64_t windowEnd = terminalNonfinite ? failureStep + m_config.jumpSteps : m_report.lastStep;
        // Layers are judged over a shorter look-back than the total: their own baseline just
        // before the onset is what matters, and a thousand layers times the full window is slow.
        const int64_t layerWindowBegin =
            std::max(m_scalarSteps[windowBegin], onsetStep - std::max<int64_t>(4 * m_config.baselineRows, 100));
        auto blame = blameLayers(layerWindowBegin, onsetStep, windowEnd);
        if (!blame)
            return Error{blame.error()};
        for (const auto& [onset, position] : *blame) {
            if (onset.nonfiniteStep && (!nonfiniteStep || *onset.nonfiniteStep < *nonfiniteStep) &&
                *onset.nonfiniteStep >= onsetStep)
                nonfiniteStep = onset.nonfiniteStep;
        }
        fillLayers(incident, *blame);
        incident.nonfiniteStep = nonfiniteStep;
        evidence.windowEndStep = nonfiniteStep ? *nonfiniteStep : m_scalarSteps[endRow];
        m_blowupOnsetRow = onsetRow;
        m_blowupOnsetStep = onsetStep;

        // Cause and suggestion, by the diagnosis table.
        const std::string ratio = evidence.jumpRatio ? formatNumber(*evidence.jumpRatio, 2) : std::string("?");
        const std::string first = incident.layers.empty() ? std::string() : incident.layers.front();
        const std::string series = m_gradNorm.empty() ? "loss" : "gradient norm";
        if (const Incident* input = badInputNear(onsetStep, 1, 0)) {
            incident.cause = "Sudden blow-up at one batch: the input batch of step " + std::to_string(input->onsetStep) +
                             " holds " + (input->severity == Severity::Critical ? "NaN/Inf" : "extreme values") +
                             (input->evidence.note.empty() ? "" : " (" + input->evidence.note + ")") + "; the " +
                             series + " jumped x" + ratio + " and the update destroyed the weights.";
            incident.suggestion = "Inspect that batch and fix or filter the records it came from; clip gradients "
                                  "(clip_grad_norm_) so one batch cannot destroy the weights." +
                                  batchNote(input->onsetStep);
        } else if (onsetRow <= 2 && nonfiniteStep && *nonfiniteStep <= m_report.firstStep + 2) {
            incident.cause = "NaN in the very first steps: dirty data or a broken initialisation.";
            incident.suggestion = "Check the first batches for NaN/Inf (torch.isfinite) and the model's initial "
                                  "weights before training.";
        } else if (sudden) {
            incident.cause = "Sudden blow-up at one batch: the " + series + " jumped x" + ratio + " at step " +
                             std::to_string(onsetStep) + " from a stable baseline" +
                             (first.empty() ? "" : ", first in " + first) + ".";
            incident.suggestion = "Inspect the batch of step " + std::to_string(onsetStep) +
                                  " (save it and replay it with the checkpoint before it); clip gradients so one "
                                  "batch cannot destroy the weights." + batchNote(onsetStep);
            if (m_fp16)
                incident.suggestion += " Under float16 AMP, check for overflow (values > 65504): compute the loss in "
                                       "fp32 and check the GradScaler.";
        } else {
            std::string lrNote;
            if (!m_lr.empty()) {
                const double lrOnset = m_lr[std::max(windowBegin, onsetRow > 50 ? onsetRow - 50 : size_t(0))];
                const double lrEnd = m_lr[std::min(endRow, m_lr.size() - 1)];
                if (std::isfinite(lrOnset) && std::isfinite(lrEnd) && lrOnset > 0 && lrEnd > 1.5 * lrOnset)
                    lrNote = "; the learning rate rose x" + formatNumber(lrEnd / lrOnset, 2) + " meanwhile";
            }
            const double slope = evidence.growthDecadesPerStep.value_or(kNaN);
            const std::string rate = slope > 0 ? ", x10 every " + formatNumber(1.0 / slope, 2) + " steps" : "";
            incident.cause = "Gradient explosion: the " + series + " grew for " +
                             std::to_string(evidence.windowEndStep - onsetStep) + " steps from step " +
                             std::to_string(onsetStep) + rate + lrNote +
                             (nonfiniteStep ? ", until NaN at step " + std::to_string(*nonfiniteStep) : "") +
                             ". Learning rate too high for this point of training.";
            incident.suggestion = "Lower the learning rate (or its schedule's peak), clip gradients "
                                  "(clip_grad_norm_ at a few times the baseline norm" +
                                  (evidence.baseline ? " of " + formatNumber(*evidence.baseline, 2) : std::string()) +
                                  "), and consider warm-up. Resume from a checkpoint before step " +
                                  std::to_string(onsetStep) + ".";
            if (m_fp16)
                incident.suggestion += " Under float16 AMP, keep the loss in fp32 and check the GradScaler.";
        }
        m_report.incidents.push_back(incident);
        return Status::success();
    }

    // Per-layer onsets over [windowBeginStep, windowEndStep]: gradient norms (and their non-finite
    // counts) and activation ranges, each measured against its own baseline before `onsetStep`.
    Result<std::vector<std::pair<LayerOnset, int>>> blameLayers(int64_t windowBeginStep, int64_t onsetStep,
                                                                int64_t windowEndStep) const
    {
        std::vector<std::pair<LayerOnset, int>> onsets;
        auto analyse = [&](LayerColumn& column) {
            const LogSeries& s = column.series;
            if (s.empty())
                return;
            std::vector<double> before;
            for (size_t r = 0; r < s.size(); ++r)
                if (s.finite[r] && s.steps[r] < onsetStep)
                    before.push_back(s.log[r]);
            const double baseline = before.size() >= 3 ? medianOf(before) : kNaN;
            const std::vector<double> m = smoothed(s, 0, s.size(), m_config.smoothingRows);
            size_t badRow = s.size();
            for (size_t r = 0; r < s.size(); ++r) {
                const bool isBad = !s.finite[r] ? true
                                   : std::isfinite(baseline) ? m[r] - baseline >= m_config.layerDecades
                                                             : false;
                if (isBad) {
                    badRow = r;
                    break;
                }
            }
            if (badRow == s.size())
                return;
            const Rise rise = findOnset(s, 0, badRow, m_config);
            const double base = std::isfinite(rise.baseline) ? rise.baseline : baseline;
            // Layers are compared by when their rise first reached half of layer_decades (x3 for
            // the default): one yardstick for all, whatever each layer's own noise, so a quiet
            // layer's wobble a step early does not count as going bad first.
            size_t onsetRow = std::min(rise.onsetRow, badRow);
            while (onsetRow < badRow && s.finite[onsetRow] &&
                   !(std::isfinite(base) && s.log[onsetRow] - base >= 0.5 * m_config.layerDecades))
                ++onsetRow;
            LayerOnset onset{column.name, column.source, s.steps[onsetRow], 0.0, false, std::nullopt};
            // Magnitude: how far above its baseline the layer was at its onset step.
            double magnitude = !s.finite[onsetRow] ? kInf
                               : std::isfinite(base) ? s.log[onsetRow] - base
                                                     : 0.0;
            for (size_t r = onsetRow; r < s.size(); ++r)
                if (!s.finite[r]) {
                    onset.nonfinite = true;
                    onset.nonfiniteStep = s.steps[r];
                    break;
                }
            onset.magnitudeDecades = std::isfinite(magnitude) || magnitude == kInf ? magnitude : 0.0;
            onsets.push_back({onset, column.position});
        };

        if (const TableInfo* layers = m_reader.table(rf::kLayers); layers && hasDataset(rf::kLayers, "grad_norm")) {
            // h rows past the window's end, so that the centred median sees what followed.
            auto columns = readWindow(rf::kLayers, "grad_norm", "grad_nonfinite", nullptr, windowBeginStep,
                                      windowEndStep, m_config.smoothingRows);
            if (!columns)
                return Error{columns.error()};
            for (auto& column : *columns) {
                column.position = m_order.parameter(column.name);
                analyse(column);
            }
        }
        if (const TableInfo* activations = m_reader.table(rf::kActivations); activations) {
            auto columns = readWindow(rf::kActivations, "max", "nan", "inf", windowBeginStep, windowEndStep,
                                      m_config.smoothingRows);
            if (!columns)
                return Error{columns.error()};
            for (auto& column : *columns) {
                column.position = m_order.module(column.name);
                analyse(column);
            }
        }
        orderLayerOnsets(onsets, m_config.tieDecades);
        return onsets;
    }

    // One column per layer over a step window (a few hundred rows at most). `value` gives the
    // magnitude (for activations the larger of |min| and |max|); the count datasets, when present,
    // mark rows as non-finite.
    Result<std::vector<LayerColumn>> readWindow(const char* table, const char* value, const char* countA,
                                                const char* countB, int64_t beginStep, int64_t endStep,
                                                int64_t extraRows = 0) const
    {
        const TableInfo* info = m_reader.table(table);
        const auto& steps = m_reader.steps(table);
        const int64_t available = std::min<int64_t>(int64_t(steps.size()), info->rows);
        const int64_t begin = int64_t(rowAtOrAfter(steps, beginStep));
        const int64_t end = std::min<int64_t>(available, int64_t(rowAfter(steps, endStep)) + extraRows);
        std::vector<LayerColumn> columns;
        if (end <= begin)
            return columns;
        const bool isActivation = std::string(table) == rf::kActivations;
        auto read = [&](const char* dataset) -> Result<std::vector<float>> {
            if (!dataset || !hasDataset(table, dataset))
                return std::vector<float>{};
            return m_reader.readBlock(table, dataset, begin, end - begin);
        };
        auto values = read(value);
        if (!values)
            return Error{values.error()};
        auto lows = read(isActivation ? "min" : nullptr);
        auto a = read(countA);
        auto b = read(countB);
        for (auto* r : {&lows, &a, &b})
            if (!*r)
                return Error{r->error()};
        const size_t width = info->names.size();
        const size_t rows = size_t(end - begin);
        std::vector<int64_t> windowSteps(steps.begin() + begin, steps.begin() + end);
        for (size_t c = 0; c < width; ++c) {
            std::vector<double> column;
            std::vector<int64_t> columnSteps;
            column.reserve(rows);
            columnSteps.reserve(rows);
            for (size_t r = 0; r < rows; ++r) {
                const size_t k = r * width + c;
                double v = values->empty() ? kNaN : double((*values)[k]);
                if (!lows->empty() && std::isfinite((*lows)[k]))
                    v = std::isfinite(v) ? std::max(std::fabs(v), std::fabs(double((*lows)[k]))) : v;
                const bool counted = (!a->empty() && (*a)[k] > 0) || (!b->empty() && (*b)[k] > 0);
                // An exact zero (a dead unit, a step with no gradient) says nothing about a rise;
                // as a baseline it would make any later value look like 40 decades.
                if (v == 0 && !counted)
                    continue;
                column.push_back(counted ? kNaN : v);
                columnSteps.push_back(windowSteps[r]);
            }
            columns.push_back({info->names[c], std::string(table) + (isActivation ? "" : "/" + std::string(value)), 0,
                               makeLogSeries(columnSteps, column)});
        }
        return columns;
    }

    void fillLayers(Incident& incident, const std::vector<std::pair<LayerOnset, int>>& onsets) const
    {
        for (const auto& [onset, position] : onsets) {
            if (std::find(incident.layers.begin(), incident.layers.end(), onset.name) != incident.layers.end())
                continue;
            if (incident.layers.size() >= size_t(m_config.maxLayersListed))
                break;
            incident.layers.push_back(onset.name);
            incident.evidence.layerOnsets.push_back(onset);
        }
    }

    Status reportNonfiniteBurst(const Burst& burst)
    {
        m_lastBurstEndRow = burst.lastRow;
        m_burstRows.push_back({burst.firstRow, burst.lastRow});
        const int64_t first = m_scalarSteps[burst.firstRow];
        const int64_t last = m_scalarSteps[burst.lastRow];
        Incident incident;
        incident.kind = IncidentKind::NonfiniteLoss;
        incident.severity = Severity::Warning;
        incident.onsetStep = first;
        incident.evidence.series = m_loss.finite[burst.firstRow] ? m_primaryName : "scalars/loss";
        incident.evidence.windowBeginStep = first;
        incident.evidence.windowEndStep = last;
        incident.evidence.count = burst.count;
        int64_t skipped = 0;
        for (size_t r = burst.firstRow; r <= burst.lastRow; ++r)
            skipped += skippedAt(r);

        // Which layer produced it: the first module (in forward order) whose output went
        // non-finite at the burst's first logged activation row, then the gradients.
        std::vector<std::pair<LayerOnset, int>> onsets;
        std::string origin, originKind;
        bool originInputFinite = false;
        if (const TableInfo* activations = m_reader.table(rf::kActivations)) {
            auto columns = readWindow(rf::kActivations, "max", "nan", "inf", first, last);
            if (!columns)
                return Error{columns.error()};
            int64_t earliest = std::numeric_limits<int64_t>::max();
            for (size_t c = 0; c < columns->size(); ++c) {
                const LayerColumn& column = (*columns)[c];
                for (size_t r = 0; r < column.series.size(); ++r)
                    if (!column.series.finite[r]) {
                        onsets.push_back({LayerOnset{column.name, "activations", column.series.steps[r], kInf, true, column.series.steps[r]},
                                          m_order.module(column.name)});
                        if (column.series.steps[r] < earliest ||
                            (column.series.steps[r] == earliest && m_order.module(column.name) < m_order.module(origin))) {
                            earliest = column.series.steps[r];
                            origin = column.name;
                            originKind = c < activations->kinds.size() ? activations->kinds[c] : "";
                            // Its input: the previous module's output, or the batch for the first one.
                            originInputFinite = c == 0 ? !badInputNear(earliest, 0, 0)
                                                       : (r < (*columns)[c - 1].series.size() &&
                                                          (*columns)[c - 1].series.finite[r]);
                        }
                        break;
                    }
            }
        }
        bool gradientsNonfinite = false;
        if (hasDataset(rf::kLayers, "grad_norm")) {
            auto columns = readWindow(rf::kLayers, "grad_norm", "grad_nonfinite", nullptr, first, last);
            if (!columns)
                return Error{columns.error()};
            for (const auto& column : *columns)
                for (size_t r = 0; r < column.series.size(); ++r)
                    if (!column.series.finite[r]) {
                        gradientsNonfinite = true;
                        onsets.push_back({LayerOnset{column.name, column.source, column.series.steps[r], kInf, true, column.series.steps[r]},
                                          m_order.parameter(column.name)});
                        break;
                    }
        }
        orderLayerOnsets(onsets, m_config.tieDecades);
        fillLayers(incident, onsets);

        const std::string at = burst.count == 1 ? "at step " + std::to_string(first)
                                                : "on " + std::to_string(burst.count) + " steps from " +
                                                      std::to_string(first) + " to " + std::to_string(last);
        incident.cause = "Non-finite loss " + at + (skipped ? ", skipped by the training," : "") +
                         " and training recovered.";
        const Incident* input = badInputNear(first, 0, last - first);
        if (input && input->severity == Severity::Critical) {
            incident.cause += " The input batch held NaN/Inf: dirty data.";
            incident.suggestion = "Validate batches in the data loader (torch.isfinite) and fix the records." +
                                  batchNote(first);
        } else if (burst.firstRow <= 1) {
            incident.cause += " It happened in the first batch: dirty data or a broken initialisation.";
            incident.suggestion = "Check the first batches and the initial weights for NaN/Inf." + batchNote(first);
        } else if (!origin.empty() && originInputFinite) {
            incident.cause += " One layer only: the output of " + origin +
                              (originKind.empty() ? "" : " (" + originKind + ")") +
                              " went non-finite while its input was finite, so an operation inside it (division "
                              "by zero, log(0), sqrt of a negative) produced the NaN.";
            incident.suggestion = "Guard that operation in " + origin +
                                  ": add an eps to divisors and clamp log/sqrt arguments, sized for the dtype (1e-8 "
                                  "vanishes in fp16; use 1e-5 or more there, or compute it in fp32)." +
                                  batchNote(first);
        } else if (m_fp16) {
            incident.cause += " Sporadic NaN under float16 AMP: fp16 overflow (values above 65504).";
            incident.suggestion = "Compute the loss (and softmax/log-sum-exp) in fp32 and check that the GradScaler "
                                  "skips these steps and lowers its scale." + batchNote(first);
        } else {
            incident.cause += origin.empty() ? (gradientsNonfinite ? " The gradients went non-finite; activations were "
                                                                     "not logged at that step, so the layer that "
                                                                     "produced it is not known."
                                                                   : "")
                                             : " First non-finite output: " + origin + ".";
            incident.suggestion = "Replay that step's batch with the checkpoint before it to find the operation; "
                                  "log activations at every step around it." + batchNote(first);
        }
        m_report.incidents.push_back(incident);
        return Status::success();
    }

    // ---- spikes -----------------------------------------------------------------------------

    bool excludedFromSpikes(size_t row) const
    {
        for (auto [first, last] : m_burstRows)
            if (row + 2 >= first && row <= last + 2)
                return true;
        return false;
    }

    void detectSpikes()
    {
        struct SpikeRow
        {
            size_t row;
            double excess; // decades above the running median
            bool recovered;
            std::string series;
            double baseline;
            double value;
        };
        std::vector<SpikeRow> spikes;
        auto scan = [&](const LogSeries& s, const std::string& name) {
            if (s.empty())
                return;
            std::vector<double> window; // the last spikeBaselineRows finite, non-spike values
            const size_t width = size_t(std::max<int64_t>(3, m_config.spikeBaselineRows));
            std::vector<double> scratch;
            // Not into a blow-up: its first rows are its onset, not a spike.
            const size_t end = m_blowupOnsetRow ? (*m_blowupOnsetRow > 2 ? *m_blowupOnsetRow - 2 : 0) : s.size();
            for (size_t r = 0; r < end; ++r) {
                if (!s.finite[r] || excludedFromSpikes(r))
                    continue;
                if (s.steps[r] < s.steps.front() + m_config.warmupSteps) {
                    // Early training is turbulent by nature: learn the baseline, report nothing.
                    window.push_back(s.log[r]);
                    if (window.size() > width)
                        window.erase(window.begin());
                    continue;
                }
                if (window.size() >= width / 2) {
                    scratch.assign(window.begin(), window.end());
                    const double median = medianInPlace(scratch);
                    const double excess = s.log[r] - median;
                    double noise = 0;
                    if (excess >= m_config.spikeDecades) { // the noise only matters past that
                        for (double& v : scratch)
                            v = std::fabs(v - median);
                        noise = 1.4826 * medianInPlace(scratch);
                    }
                    if (excess >= std::max(m_config.spikeDecades, m_config.spikeNoiseSigmas * noise)) {
                        // Recovered: the next rows are back near the median.
                        std::vector<double> after;
                        for (size_t k = r + 1; k < s.size() && after.size() < 10 &&
                                               k <= r + size_t(m_config.recoveryRows);
                             ++k)
                            if (s.finite[k])
                                after.push_back(s.log[k]);
                        const bool recovered =
                            !after.empty() &&
                            medianOf(after) <= median + std::max(0.5 * m_config.spikeDecades, 3 * noise);
                        const bool endOfLog = r + 1 + size_t(std::min<int64_t>(m_config.recoveryRows, 10)) > s.size();
                        if (recovered || endOfLog)
                            spikes.push_back({r, excess, recovered, name, std::pow(10.0, median), s.raw[r]});
                        continue; // keep the spike out of the baseline
                    }
                }
                window.push_back(s.log[r]);
                if (window.size() > width)
                    window.erase(window.begin());
            }
        };
        scan(primary(), m_primaryName);
        if (!m_gradNorm.empty()) {
            bool positive = true;
            for (size_t r = 0; r < m_loss.size() && positive; ++r)
                positive = !m_loss.finite[r] || m_loss.raw[r] > 0;
            if (positive)
                scan(m_loss, "scalars/loss");
        }
        std::sort(spikes.begin(), spikes.end(), [](const SpikeRow& x, const SpikeRow& y) { return x.row < y.row; });
        constexpr int kSpikesBlamed = 20;
        int blamed = 0;
        size_t i = 0;
        while (i < spikes.size()) {
            size_t j = i + 1;
            while (j < spikes.size() &&
                   m_scalarSteps[spikes[j].row] - m_scalarSteps[spikes[j - 1].row] <= m_config.burstGapSteps)
                ++j;
            size_t worst = i;
            bool recovered = true;
            std::set<std::string> series;
            for (size_t k = i; k < j; ++k) {
                if (spikes[k].excess > spikes[worst].excess)
                    worst = k;
                recovered = recovered && spikes[k].recovered;
                series.insert(spikes[k].series);
            }
            const SpikeRow& top = spikes[worst];
            Incident incident;
            incident.kind = IncidentKind::Spike;
            incident.severity = Severity::Warning;
            incident.onsetStep = m_scalarSteps[spikes[i].row];
            auto& e = incident.evidence;
            e.series.clear();
            for (const auto& name : series)
                e.series += (e.series.empty() ? "" : ", ") + name;
            e.windowBeginStep = incident.onsetStep;
            e.windowEndStep = m_scalarSteps[spikes[j - 1].row];
            e.baseline = top.baseline;
            e.peak = top.value;
            e.jumpRatio = std::pow(10.0, top.excess);
            e.count = int64_t(j - i);
            if (!recovered)
                e.note = "not yet recovered at the end of the log";
            const std::string ratio = formatNumber(*e.jumpRatio, 2);
            incident.cause = "An isolated jump (x" + ratio + " the running median) in " + e.series + " at step " +
                             std::to_string(incident.onsetStep) +
                             (recovered ? " that recovered: one unusual batch, or an outlier the optimiser absorbed."
                                        : "; the log ends before it could recover.");
            incident.suggestion = "Inspect the batch of step " + std::to_string(incident.onsetStep) +
                                  "; gradient clipping keeps such batches from moving the weights far." +
                                  batchNote(incident.onsetStep);
            // Layer blame reads a window per spike: only for the first few of a spiky run.
            if (++blamed <= kSpikesBlamed) {
                const size_t from = spikes[i].row > 30 ? spikes[i].row - 30 : 0;
                if (auto layers = blameLayers(m_scalarSteps[from], incident.onsetStep, e.windowEndStep))
                    fillLayers(incident, *layers);
            }
            m_report.incidents.push_back(incident);
            i = j;
        }
    }

    // ---- AMP loss scale ---------------------------------------------------------------------

    void detectLossScaleCollapse()
    {
        if (m_lossScale.empty())
            return;
        const size_t n = m_lossScale.size();
        size_t r = 1;
        while (r < n) {
            if (!(m_lossScale[r] < m_lossScale[r - 1])) {
                ++r;
                continue;
            }
            const size_t start = r;
            while (r < n && m_lossScale[r] < m_lossScale[r - 1])
                ++r;
            const int64_t decreases = int64_t(r - start);
            const double from = m_lossScale[start - 1];
            const double to = m_lossScale[r - 1];
            const int64_t startStep = m_scalarSteps[start];
            const bool atFloor = !m_lossScaleFromEvents && to <= m_config.lossScaleFloor;
            if (decreases < m_config.lossScaleCascade || (!atFloor && startStep < m_config.lossScaleWarmupSteps))
                continue;
            // How long it stays down: the scale recovering means training went on.
            size_t stay = r;
            while (stay < n && m_lossScale[stay] <= to * 1.0000001)
                ++stay;
            Incident incident;
            incident.kind = IncidentKind::LossScaleCollapse;
            incident.severity = Severity::Critical;
            incident.onsetStep = startStep;
            auto& e = incident.evidence;
            e.series = m_lossScaleFromEvents ? "events/loss_scale_decrease" : "scalars/loss_scale";
            e.windowBeginStep = startStep;
            e.windowEndStep = m_scalarSteps[stay - 1];
            e.baseline = from;
            e.peak = to;
            e.jumpRatio = to > 0 ? to / from : 0.0;
            e.count = decreases;
            int64_t skipped = 0;
            for (size_t k = start; k < stay; ++k)
                skipped += skippedAt(k);
            e.note = std::to_string(decreases) + " consecutive decreases from " + formatNumber(from) + " to " +
                     formatNumber(to) + (skipped ? "; " + std::to_string(skipped) + " steps skipped" : "") +
                     (stay == n ? "; still down at the end of the log" : "");
            incident.cause = "The AMP loss scale fell in a cascade (" + e.note +
                             "): every step overflows in fp16, so the scaler keeps halving and skipping. Something "
                             "produces Inf/NaN regardless of the scale: fp16 overflow in the forward pass, or a real "
                             "NaN.";
            incident.suggestion = "Compute the loss (and softmax, norms, exp) in fp32, look for activations above "
                                  "65504 or a NaN source (replay one of those steps), check the GradScaler settings "
                                  "(init_scale, growth_interval), or train in bfloat16.";
            m_collapseWindows.push_back({startStep, e.windowEndStep});
            m_report.incidents.push_back(incident);
        }
    }

    // ---- skipped steps ----------------------------------------------------------------------

    void detectSkippedSteps()
    {
        if (m_skipped.empty())
            return;
        const size_t n = m_skipped.size();
        size_t r = 0;
        while (r < n) {
            if (!skippedAt(r)) {
                ++r;
                continue;
            }
            const size_t start = r;
            while (r < n && skippedAt(r))
                ++r;
            const int64_t first = m_scalarSteps[start];
            const int64_t last = m_scalarSteps[r - 1];
            const int64_t length = int64_t(r - start);
            if (length < m_config.skippedRunSteps)
                continue;
            bool explained = m_blowupOnsetStep && first >= *m_blowupOnsetStep;
            for (auto [from, to] : m_collapseWindows)
                explained = explained || (first <= to && last >= from);
            for (auto [firstRow, lastRow] : m_burstRows)
                explained = explained || (start <= lastRow && r - 1 >= firstRow);
            if (explained)
                continue;
            Incident incident;
            incident.kind = IncidentKind::SkippedSteps;
            incident.onsetStep = first;
            const bool toEnd = r == n;
            incident.severity = toEnd ? Severity::Critical : Severity::Warning;
            incident.evidence.series = "scalars/skipped";
            incident.evidence.windowBeginStep = first;
            incident.evidence.windowEndStep = last;
            incident.evidence.count = length;
            if (toEnd)
                incident.evidence.note = "still skipping at the end of the log";
            incident.cause = std::to_string(length) + " consecutive optimizer steps skipped from step " +
                             std::to_string(first) + (toEnd ? " to the end of the log: training has stopped learning."
                                                             : " to " + std::to_string(last) + ".");
            incident.suggestion = "Find why the training skips them (non-finite gradients, an AMP overflow, a guard "
                                  "in the loop); replay one of those steps." + batchNote(first);
            m_report.incidents.push_back(incident);
        }
    }

    // ---- vanishing gradients (streams /layers/grad_norm) -------------------------------------

    Status detectVanishing()
    {
        const TableInfo* layers = m_reader.table(rf::kLayers);
        if (!layers || !hasDataset(rf::kLayers, "grad_norm") || layers->names.size() < 2)
            return Status::success();
        const auto& steps = m_reader.steps(rf::kLayers);
        int64_t rows = std::min<int64_t>(int64_t(steps.size()), layers->rows);
        // Not inside a blow-up: there the healthy layers look "vanished" next to the exploding ones.
        if (m_blowupOnsetStep)
            rows = std::min<int64_t>(rows, int64_t(rowAtOrAfter(steps, *m_blowupOnsetStep)));
        if (rows <= 0)
            return Status::success();
        const size_t width = layers->names.size();
        constexpr int64_t kCellRows = 32;
        struct Run
        {
            int64_t begin = -1;
            int64_t end = -1;
            int64_t zeroRows = 0;
            int64_t cellRows = 0;
        };
        std::vector<Run> open(width);
        struct Vanished
        {
            size_t layer;
            int64_t begin;
            int64_t end;
            double zeroFraction;
        };
        std::vector<Vanished> vanished;
        std::vector<float> sumLog(width);
        std::vector<double> cellMean(width);
        std::vector<int32_t> positive(width), zeros(width), counted(width);
        std::vector<double> scratch;
        scratch.reserve(width);
        auto closeRun = [&](size_t layer) {
            Run& run = open[layer];
            if (run.begin >= 0 && run.end - run.begin + 1 >= m_config.vanishingMinSteps)
                vanished.push_back({layer, run.begin, run.end, double(run.zeroRows) / double(std::max<int64_t>(1, run.cellRows))});
            run = Run{};
        };
        auto finishCell = [&](int64_t cellBegin, int64_t cellEnd) {
            scratch.clear();
            for (size_t l = 0; l < width; ++l) {
                cellMean[l] = positive[l] ? double(sumLog[l]) / positive[l] : kNaN;
                if (std::isfinite(cellMean[l]))
                    scratch.push_back(cellMean[l]);
            }
            const double median = medianOf(scratch);
            for (size_t l = 0; l < width; ++l) {
                if (counted[l] == 0)
                    continue; // all non-finite: says nothing either way
                const bool mostlyZero = zeros[l] * 2 > counted[l];
                const bool far = std::isfinite(cellMean[l]) && std::isfinite(median) &&
                                 cellMean[l] < median - m_config.vanishingDecades;
                Run& run = open[l];
                if (mostlyZero || far) {
                    if (run.begin < 0)
                        run.begin = steps[size_t(cellBegin)];
                    run.end = steps[size_t(cellEnd - 1)];
                    run.zeroRows += zeros[l];
                    run.cellRows += counted[l];
                } else {
                    closeRun(l);
                }
            }
            std::fill(sumLog.begin(), sumLog.end(), 0.f);
            std::fill(positive.begin(), positive.end(), 0);
            std::fill(zeros.begin(), zeros.end(), 0);
            std::fill(counted.begin(), counted.end(), 0);
        };

        // The next block is read on a helper thread while this one is analysed: reading and
        // analysing cost about the same, so this halves the time. Only that thread calls HDF5
        // meanwhile, so HDF5 needs no thread safety; memory is two blocks.
        auto readBlockAt = [this, rows](int64_t begin) {
            return m_reader.readBlock(rf::kLayers, "grad_norm", begin, std::min(m_config.blockRows, rows - begin));
        };
        std::future<Result<std::vector<float>>> next = std::async(std::launch::async, readBlockAt, int64_t(0));
        for (int64_t begin = 0; begin < rows; begin += m_config.blockRows) {
            const int64_t count = std::min(m_config.blockRows, rows - begin);
            Result<std::vector<float>> block = next.get();
            if (!block)
                return Error{block.error()};
            if (begin + m_config.blockRows < rows)
                next = std::async(std::launch::async, readBlockAt, begin + m_config.blockRows);
            const float* data = block->data();
            for (int64_t cell = 0; cell < count; cell += kCellRows) {
                const int64_t cellCount = std::min(kCellRows, count - cell);
                // Branch-free so the compiler vectorises it: this loop sees every value of the
                // largest dataset in the run.
                float* sums = sumLog.data();
                int32_t* nCounted = counted.data();
                int32_t* nZeros = zeros.data();
                int32_t* nPositive = positive.data();
                for (int64_t r = cell; r < cell + cellCount; ++r)
                    accumulateRow(reinterpret_cast<const uint32_t*>(data + size_t(r) * width), width, sums, nCounted,
                                  nZeros, nPositive);
                finishCell(begin + cell, begin + cell + cellCount);
            }
            if (!progressed(0.3 + 0.7 * double(begin + count) / double(rows), "layers"))
                return Status::success();
        }
        for (size_t l = 0; l < width; ++l)
            closeRun(l);
        if (vanished.empty())
            return Status::success();

        // Layers that never had a gradient are frozen or unused (info); the others vanished.
        const int64_t firstStep = steps.front();
        const int64_t lastStep = steps[size_t(rows - 1)];
        std::vector<Vanished> frozen, lost;
        for (const auto& v : vanished)
            (v.begin == firstStep && v.end == lastStep ? frozen : lost).push_back(v);
        auto emit = [&](std::vector<Vanished> group, bool isFrozen) {
            if (group.empty())
                return;
            std::sort(group.begin(), group.end(), [&](const Vanished& x, const Vanished& y) {
                if (x.begin != y.begin)
                    return x.begin < y.begin;
                return m_order.parameter(layers->names[x.layer]) < m_order.parameter(layers->names[y.layer]);
            });
            Incident incident;
            incident.kind = IncidentKind::Vanishing;
            incident.severity = isFrozen ? Severity::Info : Severity::Warning;
            incident.onsetStep = group.front().begin;
            auto& e = incident.evidence;
            e.series = "layers/grad_norm";
            e.windowBeginStep = group.front().begin;
            e.windowEndStep = group.front().end;
            e.count = int64_t(group.size());
            for (const auto& v : group) {
                e.windowEndStep = std::max(e.windowEndStep, v.end);
                if (incident.layers.size() < size_t(m_config.maxLayersListed)) {
                    incident.layers.push_back(layers->names[v.layer]);
                    e.layerOnsets.push_back({layers->names[v.layer], "layers/grad_norm", v.begin, -m_config.vanishingDecades,
                                             false, std::nullopt});
                }
            }
            const std::string names = joinNames(incident.layers);
            if (isFrozen) {
                incident.cause = std::to_string(group.size()) + " parameter(s) have a zero or negligible gradient for the "
                                 "whole run (" + names + "): frozen, unused in forward, detached from the loss, or "
                                 "without effect on it (a bias right before a normalisation layer).";
                incident.suggestion = "If they should train, check requires_grad, that forward uses them, and that "
                                      "nothing detaches them (.detach(), torch.no_grad, .data); a bias before "
                                      "BatchNorm can be dropped (bias=False).";
            } else {
                const double zeroFraction = group.front().zeroFraction;
                incident.cause = "Vanishing gradients: " + names + (group.size() > 1 ? " have" : " has") +
                                 " a gradient norm " +
                                 (zeroFraction > 0.5 ? std::string("of zero")
                                                     : "over " + formatNumber(m_config.vanishingDecades) +
                                                           " orders of magnitude below the other layers") +
                                 " from step " + std::to_string(incident.onsetStep) + " to " +
                                 std::to_string(e.windowEndStep) + ".";
                e.note = "zero on " + formatNumber(100 * zeroFraction, 3) + "% of the rows";
                incident.suggestion = "Look for dead activations (ReLU units stuck at zero), saturated sigmoid/tanh, "
                                      "a learning rate that collapsed, or too deep a stack without residuals or "
                                      "normalisation; check the layer's activations around the onset.";
            }
            m_report.incidents.push_back(incident);
        };
        emit(frozen, true);
        // Layers that vanish together form one incident; a later, separate group is another.
        std::sort(lost.begin(), lost.end(), [](const Vanished& x, const Vanished& y) { return x.begin < y.begin; });
        std::vector<Vanished> group;
        int64_t groupEnd = std::numeric_limits<int64_t>::min();
        for (const auto& v : lost) {
            if (!group.empty() && v.begin > groupEnd) {
                emit(group, false);
                group.clear();
            }
            group.push_back(v);
            groupEnd = std::max(groupEnd, v.end);
        }
        emit(group, false);
        return Status::success();
    }

    // ---- ordering ---------------------------------------------------------------------------

    void sortIncidents()
    {
        auto rank = [](IncidentKind k) { return int(k); };
        std::stable_sort(m_report.incidents.begin(), m_report.incidents.end(), [&](const Incident& x, const Incident& y) {
            if (x.severity != y.severity)
                return int(x.severity) < int(y.severity);
            if (x.onsetStep != y.onsetStep)
                return x.onsetStep < y.onsetStep;
            return rank(x.kind) < rank(y.kind);
        });
    }

    const RunReader& m_reader;
    ScanConfig m_config;
    ProgressCallback m_progress;
    ForwardOrder m_order;
    ScanReport m_report;
    bool m_cancelled = false;
    bool m_fp16 = false;

    std::vector<int64_t> m_scalarSteps;
    LogSeries m_loss;
    LogSeries m_gradNorm;
    std::string m_primaryName;
    std::vector<double> m_skipped, m_lossScale, m_evalLoss, m_lr;
    bool m_lossScaleFromEvents = false;

    std::vector<Incident> m_badInputs;
    std::optional<size_t> m_lastBurstEndRow;
    std::vector<std::pair<size_t, size_t>> m_burstRows;
    std::optional<size_t> m_blowupOnsetRow;
    std::optional<int64_t> m_blowupOnsetStep;
    std::vector<std::pair<int64_t, int64_t>> m_collapseWindows;
};

} // namespace

Result<ScanReport> scanRun(const RunReader& reader, const ScanConfig& config, const ProgressCallback& progress)
{
    try {
        Detector detector(reader, config, progress);
        return detector.run();
    } catch (const std::exception& e) {
        return Error{"scan of " + reader.info().directory + " failed: " + e.what()};
    }
}

} // namespace nanscope
