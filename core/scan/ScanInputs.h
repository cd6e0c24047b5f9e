#pragma once

// What the scan reads of a run, and the only scan code that touches the run's source (RunSource:
// run.h5, or another tool's logs read into memory). The scalar series are loaded whole (one double
// per logged step); the [n, L] tables stay in the source and are read by row block or step window
// when a rule asks. A run can also be made here from hand-made series, so that every rule can be
// tested without writing a file.

#include "core/run/SkippedSteps.h"
#include "core/Result.h"
#include "core/run/MemoryRunSource.h"
#include "core/run/RunSource.h"
#include "core/scan/RobustStats.h"

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

// The scalar series on the scalar table's steps. Absent series are empty; present ones have one
// value per step (NaN-padded when a dataset is shorter).
struct RunScalars
{
    std::vector<int64_t> steps;
    LogSeries loss;
    LogSeries gradNorm;
    // The series blow-ups are found on: the gradient norm, or the loss when it is not logged.
    std::string primaryName;
    std::vector<double> skipped, lossScale, lr;
    // The evaluation loss on its own steps: evaluation usually runs at a rate of its own.
    std::vector<int64_t> evalSteps;
    std::vector<double> evalLoss;
    // The loss scale is a stand-in built from loss_scale_decrease events: its floor is unknown.
    bool lossScaleFromEvents = false;
    // The steps of rollback events: the recorder put an earlier state back, the optimizer's too.
    std::vector<int64_t> rollbackSteps;

    const LogSeries& primary() const { return gradNorm.empty() ? loss : gradNorm; }
    bool rowNonfinite(size_t row) const { return !loss.finite[row] || (!gradNorm.empty() && !gradNorm.finite[row]); }
    bool skippedAt(size_t row) const { return row < skipped.size() && runformat::isSkippedValue(skipped[row]); }
    // lr at `toRow` over lr at `fromRow` when the logged learning rate rose more than x1.5 between
    // them (a ramp or schedule the cause text names); nothing when it did not, or is not logged.
    std::optional<double> learningRateRise(size_t fromRow, size_t toRow) const;
    // The logged learning rate when it held one value (within 1%) on every finite row from
    // `fromRow` to `toRow`, five rows or more; nothing when it moved or is not logged.
    std::optional<double> constantLearningRate(size_t fromRow, size_t toRow) const;
};

// One layer's column of an [n, L] table over a window of steps.
struct LayerColumn
{
    std::string name;
    std::string source; // "layers/grad_norm", "activations", ...
    LogSeries series;
};

// Facts the caller measured outside the run file and hands to the scan as data (the scan reads
// no checkpoint itself): Adam epsilon domination from an optimizer state (see core/importers/
// OptimizerState.h, which `nanscope scan` reads).
struct ParameterEpsilonShare
{
    std::string parameter;
    double share = 0;      // elements with sqrt(v_hat) <= eps
    int64_t elements = 0;  // its element count (weights the share of the whole)
    std::optional<double> eps;
};
struct OptimizerStateFacts
{
    int64_t step = 0;  // the checkpoint's step
    std::string file;  // where it was read
    std::vector<ParameterEpsilonShare> parameters;
};
struct ScanFacts
{
    std::vector<OptimizerStateFacts> optimizerStates; // oldest first
};

// The table of runformat::isEvalLossTable among the run's tables (the first with rows); null when none.
const TableInfo* evalLossTable(const RunInfo& info);

class ScanInputs
{
public:
    // Loads the scalars of `source`'s run; `source` must outlive the inputs. A run without a
    // /scalars table is an error.
    static Result<ScanInputs> load(const RunSource& source);
    // A run held in memory: scalars by dataset name ("loss", "grad_norm", "skipped", "loss_scale",
    // "eval_loss", "lr") on `steps`.
    static ScanInputs fromMemory(const std::vector<int64_t>& steps,
                                 const std::map<std::string, std::vector<double>>& scalars);
    // Adds an in-memory [steps.size(), columnNames.size()] table (/layers, /buffers, ...), each
    // dataset row-major.
    void addTable(const std::string& name, const std::vector<std::string>& columnNames,
                  const std::vector<int64_t>& steps, const std::map<std::string, std::vector<float>>& datasets);
    // Only for a run made here (fromMemory).
    void setAttribute(const std::string& key, const std::string& value);

    const RunInfo& info() const { return m_source->info(); }
    const RunScalars& scalars() const { return m_scalars; }
    // A training loss is logged: without it only the evaluation rule can run.
    bool hasTrainingLoss() const { return !m_scalars.loss.empty(); }
    // Training under float16 AMP (fp16 overflow is then a likely cause).
    bool fp16() const;
    // What loading found missing, in words, for the report.
    const std::vector<std::string>& notes() const { return m_notes; }
    // Facts measured by the caller (optimizer states); empty unless given.
    const ScanFacts& facts() const { return m_facts; }
    void setFacts(ScanFacts facts) { m_facts = std::move(facts); }

    const TableInfo* table(const char* name) const { return info().table(name); }
    const std::vector<int64_t>& steps(const char* table) const;
    // One float64 series of a scalar table (a metric the rules have no slot for).
    Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const;
    // The table has rows and `dataset` among its value datasets.
    bool hasDataset(const char* table, const char* dataset) const;
    // Rows [rowBegin, rowBegin + rowCount) of an [n, L] dataset, row-major.
    Result<std::vector<float>> readBlock(const char* table, const char* dataset, int64_t rowBegin,
                                         int64_t rowCount) const;
    // The same into `out`, reusing its memory: what a rule streaming a whole table calls, with one
    // buffer for all its blocks.
    Status readBlockInto(const char* table, const char* dataset, int64_t rowBegin, int64_t rowCount,
                         std::vector<float>& out) const;
    // Block buffers lent to the rules that stream whole tables, one rule after another: memory one
    // rule paged in is reused by the next, not handed back to the system and faulted in again
    // (16 MiB per 4096-row block of a 1,000-column table). A rule uses slots [0, kBlockBuffers) for
    // its own duration and keeps nothing in them.
    static constexpr size_t kBlockBuffers = 3;
    std::vector<float>& blockBuffer(size_t slot) const { return m_blockBuffers.at(slot); }
    // Every column of the first `rows` rows of a few datasets of a narrow table (the inputs: a
    // handful of columns), read in row blocks, since a column read of a chunked table touches
    // every chunk once per column. By dataset, then column; datasets the table lacks are left out.
    Result<std::map<std::string, std::vector<std::vector<float>>>>
    readColumns(const char* table, std::initializer_list<const char*> datasets, size_t rows, int64_t blockRows) const;
    // One column per layer over a step window (a few hundred rows at most), plus `extraRows` rows
    // past its end. `value` gives the magnitude (for activations the larger of |min| and |max|);
    // the count datasets, when given and present, mark rows as non-finite.
    Result<std::vector<LayerColumn>> readWindow(const char* table, const char* value, const char* countA,
                                                const char* countB, int64_t beginStep, int64_t endStep,
                                                int64_t extraRows = 0) const;
    // The same columns handed to `visit` one at a time, in the table's order, without keeping them:
    // the column passed is reused for the next (copy what must outlive the call). For the rules
    // that look at every column of a wide table and keep a few figures of each.
    Status visitWindow(const char* table, const char* value, const char* countA, const char* countB,
                       int64_t beginStep, int64_t endStep, int64_t extraRows,
                       const std::function<void(const LayerColumn&)>& visit) const;

private:
    ScanInputs() = default;
    Status loadScalars();
    Status loadEvalLoss();
    void setScalars(std::vector<double> loss, std::vector<double> gradNorm);
    void scalarsFromEvents(const std::vector<std::string>& kinds, const std::vector<int64_t>& eventSteps);

    const RunSource* m_source = nullptr;
    std::shared_ptr<MemoryRunSource> m_memory; // a run made here; m_source points at it
    RunScalars m_scalars;
    std::vector<std::string> m_notes;
    ScanFacts m_facts;
    mutable std::array<std::vector<float>, kBlockBuffers> m_blockBuffers;
};

} // namespace nanscope::scan
