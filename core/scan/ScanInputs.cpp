#include "core/scan/ScanInputs.h"
#include "core/run/MeasuredCell.h"

#include "core/run/EvalLoss.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>

namespace nanscope::scan {

namespace rf = runformat;

namespace {

// The scalar datasets the rules use, by name.
struct ScalarSlots
{
    std::vector<double> loss, gradNorm, skipped, lossScale, evalLoss, lr;

    std::vector<std::pair<const char*, std::vector<double>*>> byName()
    {
        return {{rf::scalar::kLoss, &loss}, {rf::scalar::kGradNorm, &gradNorm},
                {rf::scalar::kSkipped, &skipped},    {"loss_scale", &lossScale},
                {"eval_loss", &evalLoss}, {"lr", &lr}};
    }
};

// A series shorter than the steps (a writer killed mid-append) is padded with NaN.
void fitToSteps(std::vector<double>& values, size_t steps)
{
    if (!values.empty())
        values.resize(steps, kNaN);
}

} // namespace

Result<ScanInputs> ScanInputs::load(const RunSource& source)
{
    ScanInputs inputs;
    inputs.m_source = &source;
    if (Status s = inputs.loadScalars(); !s)
        return Error{s.error()};
    return inputs;
}

ScanInputs ScanInputs::fromMemory(const std::vector<int64_t>& steps,
                                  const std::map<std::string, std::vector<double>>& scalars)
{
    ScanInputs inputs;
    RunInfo info;
    info.logPath = "in-memory run";
    inputs.m_memory = std::make_shared<MemoryRunSource>(info);
    inputs.m_source = inputs.m_memory.get();
    std::map<std::string, std::vector<double>> padded = scalars;
    for (auto& [name, values] : padded)
        fitToSteps(values, steps.size());
    inputs.m_memory->addSeriesTable(rf::kScalars, steps, std::move(padded));
    if (Status s = inputs.loadScalars(); !s)
        throw std::logic_error("in-memory run: " + s.error());
    return inputs;
}

void ScanInputs::addTable(const std::string& name, const std::vector<std::string>& columnNames,
                          const std::vector<int64_t>& steps, const std::map<std::string, std::vector<float>>& datasets)
{
    if (m_memory)
        m_memory->addMatrixTable(name, columnNames, steps, datasets);
}

void ScanInputs::setAttribute(const std::string& key, const std::string& value)
{
    if (m_memory)
        m_memory->mutableInfo().attributes[key] = value;
}

bool ScanInputs::fp16() const
{
    const auto& attributes = info().attributes;
    auto amp = attributes.find("amp_dtype");
    return amp != attributes.end() && amp->second == "float16";
}

const std::vector<int64_t>& ScanInputs::steps(const char* table) const
{
    return m_source->steps(table);
}

bool ScanInputs::hasDataset(const char* table, const char* dataset) const
{
    const TableInfo* t = this->table(table);
    return t && t->rows > 0 && std::find(t->datasets.begin(), t->datasets.end(), dataset) != t->datasets.end();
}

Result<std::vector<float>> ScanInputs::readBlock(const char* table, const char* dataset, int64_t rowBegin,
                                                 int64_t rowCount) const
{
    return m_source->readBlock(table, dataset, rowBegin, rowCount);
}

Status ScanInputs::readBlockInto(const char* table, const char* dataset, int64_t rowBegin, int64_t rowCount,
                                 std::vector<float>& out) const
{
    return m_source->readBlockInto(table, dataset, rowBegin, rowCount, out);
}

Result<std::vector<double>> ScanInputs::readSeries(const std::string& table, const std::string& dataset) const
{
    return m_source->readSeries(table, dataset);
}

Status ScanInputs::loadScalars()
{
    const TableInfo* scalarTable = table(rf::kScalars);
    if (!scalarTable) {
        // Another tool's log can hold evaluations alone; the evaluation rule still reads them.
        if (Status s = loadEvalLoss(); !s)
            return s;
        if (m_scalars.evalLoss.empty() && !table(rf::kLayers))
            return Error{info().logPath + ": no /scalars table"};
        m_notes.push_back("no training scalars logged");
        return Status::success();
    }
    m_scalars.steps = steps(rf::kScalars);
    m_scalars.steps.resize(std::min<size_t>(m_scalars.steps.size(), size_t(scalarTable->rows)));
    ScalarSlots slots;
    for (auto [name, into] : slots.byName()) {
        if (!hasDataset(rf::kScalars, name))
            continue;
        auto values = m_source->readSeries(rf::kScalars, name);
        if (!values)
            return Error{values.error()};
        *into = std::move(*values);
        fitToSteps(*into, m_scalars.steps.size());
    }
    m_scalars.skipped = std::move(slots.skipped);
    m_scalars.lossScale = std::move(slots.lossScale);
    m_scalars.lr = std::move(slots.lr);
    if (!slots.evalLoss.empty()) {
        m_scalars.evalLoss = std::move(slots.evalLoss);
        m_scalars.evalSteps = m_scalars.steps;
    } else if (Status s = loadEvalLoss(); !s) {
        return s;
    }
    if (!slots.loss.empty())
        setScalars(std::move(slots.loss), std::move(slots.gradNorm));
    // Skipped steps and loss-scale decreases from events when the scalars are missing, and the
    // rollbacks where the optimizer's count of updates is logged (a rollback puts it back too).
    // (RunReader lists no string datasets for /events: ask for the table, not the dataset.)
    const TableInfo* events = table(rf::kEvents);
    if ((m_scalars.skipped.empty() || m_scalars.lossScale.empty() ||
         hasDataset(rf::kScalars, rf::scalar::kOptimizerStep)) &&
        events && events->rows > 0)
        if (auto kinds = m_source->readStrings(rf::kEvents, rf::column::kKind))
            scalarsFromEvents(*kinds, steps(rf::kEvents));
    return Status::success();
}

// Logs of other tools evaluate at a rate of their own, so their evaluation loss is a table of its
// own steps (NaN there is data, never "not evaluated"): the first table that has one.
const TableInfo* evalLossTable(const RunInfo& info)
{
    for (const TableInfo& table : info.tables)
        if (table.rows > 0 &&
            rf::isEvalLossTable(table.name, !table.names.empty(),
                                std::find(table.datasets.begin(), table.datasets.end(), rf::kEvalLoss) !=
                                    table.datasets.end()))
            return &table;
    return nullptr;
}

Status ScanInputs::loadEvalLoss()
{
    const TableInfo* table = evalLossTable(info());
    if (!table)
        return Status::success();
    auto values = m_source->readSeries(table->name, "eval_loss");
    if (!values)
        return Error{values.error()};
    m_scalars.evalSteps = m_source->steps(table->name);
    m_scalars.evalSteps.resize(std::min<size_t>(m_scalars.evalSteps.size(), size_t(table->rows)));
    m_scalars.evalLoss = std::move(*values);
    m_scalars.evalLoss.resize(m_scalars.evalSteps.size(), kNaN);
    return Status::success();
}

void ScanInputs::setScalars(std::vector<double> loss, std::vector<double> gradNorm)
{
    m_scalars.loss = makeLogSeries(m_scalars.steps, loss);
    if (!gradNorm.empty()) {
        m_scalars.gradNorm = makeLogSeries(m_scalars.steps, gradNorm);
        m_scalars.primaryName = rf::scalarSeries(rf::scalar::kGradNorm);
    } else {
        m_notes.push_back("no /scalars/grad_norm: blow-ups are found on the loss alone");
        m_scalars.primaryName = rf::scalarSeries(rf::scalar::kLoss);
    }
}

void ScanInputs::scalarsFromEvents(const std::vector<std::string>& kinds, const std::vector<int64_t>& eventSteps)
{
    const std::vector<int64_t>& steps = m_scalars.steps;
    const bool skippedFromEvents = m_scalars.skipped.empty();
    const bool scaleFromEvents = m_scalars.lossScale.empty();
    std::vector<uint8_t> decreased(steps.size(), 0);
    bool anyDecrease = false;
    if (skippedFromEvents)
        m_scalars.skipped.assign(steps.size(), 0.0);
    for (size_t i = 0; i < kinds.size() && i < eventSteps.size(); ++i) {
        if (kinds[i] == rf::event::kRollback)
            m_scalars.rollbackSteps.push_back(eventSteps[i]);
        const size_t row = rowAtOrAfter(steps, eventSteps[i]);
        if (row >= steps.size() || steps[row] != eventSteps[i])
            continue;
        if (skippedFromEvents && rf::isSkippedEvent(kinds[i]))
            m_scalars.skipped[row] = 1.0;
        if (scaleFromEvents && kinds[i] == rf::event::kLossScaleDecrease)
            decreased[row] = anyDecrease = true;
    }
    // A stand-in scale that halves at each decrease: enough to see a cascade (its floor is
    // unknown, so only the warm-up rule tells cascades from the start-up search).
    if (anyDecrease) {
        double scale = 65536.0;
        for (uint8_t d : decreased)
            m_scalars.lossScale.push_back(scale = d ? scale / 2 : scale);
        m_scalars.lossScaleFromEvents = true;
    }
}

Result<std::map<std::string, std::vector<std::vector<float>>>>
ScanInputs::readColumns(const char* table, std::initializer_list<const char*> datasets, size_t rows,
                        int64_t blockRows) const
{
    std::map<std::string, std::vector<std::vector<float>>> columns;
    const size_t width = this->table(table)->names.size();
    for (const char* dataset : datasets) {
        if (!hasDataset(table, dataset))
            continue;
        auto& perColumn = columns[dataset];
        perColumn.assign(width, std::vector<float>(rows, 0.f));
        std::vector<float> block;
        for (int64_t begin = 0; begin < int64_t(rows); begin += blockRows) {
            const int64_t count = std::min<int64_t>(blockRows, int64_t(rows) - begin);
            if (Status s = readBlockInto(table, dataset, begin, count, block); !s)
                return Error{s.error()};
            for (int64_t r = 0; r < count; ++r)
                for (size_t c = 0; c < width; ++c)
                    perColumn[c][size_t(begin + r)] = block[size_t(r) * width + c];
        }
    }
    return columns;
}

Result<std::vector<LayerColumn>> ScanInputs::readWindow(const char* table, const char* value, const char* countA,
                                                        const char* countB, int64_t beginStep, int64_t endStep,
                                                        int64_t extraRows) const
{
    std::vector<LayerColumn> columns;
    auto visited = visitWindow(table, value, countA, countB, beginStep, endStep, extraRows,
                               [&](const LayerColumn& column) { columns.push_back(column); });
    if (!visited)
        return Error{visited.error()};
    return columns;
}

Status ScanInputs::visitWindow(const char* table, const char* value, const char* countA, const char* countB,
                               int64_t beginStep, int64_t endStep, int64_t extraRows,
                               const std::function<void(const LayerColumn&)>& visit) const
{
    const TableInfo* info = this->table(table);
    const auto& steps = this->steps(table);
    const int64_t available = std::min<int64_t>(int64_t(steps.size()), info->rows);
    const int64_t begin = int64_t(rowAtOrAfter(steps, beginStep));
    const int64_t end = std::min<int64_t>(available, int64_t(rowAfter(steps, endStep)) + extraRows);
    if (end <= begin)
        return Status::success();
    const bool isActivation = std::string(table) == rf::kActivations;
    auto read = [&](const char* dataset) -> Result<std::vector<float>> {
        if (!dataset || !hasDataset(table, dataset))
            return std::vector<float>{};
        return readBlock(table, dataset, begin, end - begin);
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
    const bool countsLogged = !a->empty() && (!countB || !b->empty());
    const std::string source = std::string(table) + (isActivation ? "" : "/" + std::string(value));
    // The block is row-major: a column's rows lie a row's width apart. Columns are gathered a tile
    // at a time, each row's stretch of the tile being contiguous, into series that are refilled
    // tile after tile: building every column of a 1,000-row window of 1,000 parameters afresh was
    // 0.1 s of the blow-up rule's 0.25 s on bench_scan's run (2026-12-05), most of it the kernel
    // handing out and zeroing the 25 MB of new pages.
    constexpr size_t kTile = 64;
    std::vector<LayerColumn> tile(std::min(kTile, width));
    for (auto& column : tile)
        column.source = source;
    for (size_t first = 0; first < width; first += kTile) {
        const size_t last = std::min(width, first + kTile);
        for (size_t c = first; c < last; ++c) {
            LayerColumn& column = tile[c - first];
            column.series.steps.clear();
            column.series.raw.clear();
        }
        for (size_t r = 0; r < rows; ++r) {
            const int64_t step = steps[size_t(begin) + r];
            for (size_t c = first; c < last; ++c) {
                const size_t k = r * width + c;
                double v = values->empty() ? kNaN : double((*values)[k]);
                if (!lows->empty() && std::isfinite((*lows)[k]))
                    v = std::isfinite(v) ? std::max(std::fabs(v), std::fabs(double((*lows)[k]))) : v;
                const bool counted = (!a->empty() && (*a)[k] > 0) || (!b->empty() && (*b)[k] > 0);
                // An exact zero (a dead unit, a step with no gradient) says nothing about a rise;
                // as a baseline it would make any later value look like 40 decades.
                if (v == 0 && !counted)
                    continue;
                // No element measured (no finite figure, no non-finite count: a module that did not
                // run that step, an expert no token went to) is no value, not a NaN.
                if (countsLogged && noElementMeasured(v, (*a)[k], b->empty() ? 0.0 : (*b)[k]))
                    continue;
                LogSeries& series = tile[c - first].series;
                series.raw.push_back(counted ? kNaN : v);
                series.steps.push_back(step);
            }
        }
        for (size_t c = first; c < last; ++c) {
            LayerColumn& column = tile[c - first];
            column.name = info->names[c];
            fillLogs(column.series);
            visit(column);
        }
    }
    return Status::success();
}

std::optional<double> RunScalars::constantLearningRate(size_t fromRow, size_t toRow) const
{
    double low = INFINITY, high = -INFINITY;
    size_t rows = 0;
    for (size_t r = fromRow; r <= toRow && r < lr.size(); ++r)
        if (std::isfinite(lr[r])) {
            low = std::min(low, lr[r]);
            high = std::max(high, lr[r]);
            ++rows;
        }
    if (rows < 5 || !(low > 0) || high > 1.01 * low)
        return std::nullopt;
    return low;
}

std::optional<double> RunScalars::learningRateRise(size_t fromRow, size_t toRow) const
{
    if (lr.empty())
        return std::nullopt;
    const double from = lr[std::min(fromRow, lr.size() - 1)];
    const double to = lr[std::min(toRow, lr.size() - 1)];
    if (std::isfinite(from) && std::isfinite(to) && from > 0 && to > 1.5 * from)
        return to / from;
    return std::nullopt;
}

} // namespace nanscope::scan
