#pragma once

#include "core/Result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nanscope {

// What a run logs, fixed before the first row: SWMR allows no new groups or datasets later.
struct RunSchema
{
    std::map<std::string, std::string> attributes; // run_name, framework, amp_dtype, loss_name, ...
    std::vector<std::string> scalars{"loss"};      // /scalars datasets; "loss" is required
    std::vector<std::string> layers;               // parameter names; empty: no /layers
    bool layerGradNorm = true; // false only for a run made from checkpoints, which hold no gradients
    bool layerParamNorm = true;
    bool layerGradNonfinite = true;
    std::vector<std::string> activations;     // module paths; empty: no /activations
    std::vector<std::string> activationKinds; // module class names, one per activation
    std::vector<std::string> buffers;         // normalisation layers; empty: no /buffers
    std::vector<std::string> inputs;          // input names; empty: no /inputs
    bool events = true;
    // Series of other logging rates (RunFormat.h, isSeriesTableName): table -> float64 datasets.
    std::map<std::string, std::vector<std::string>> seriesTables;
};

// The C++ recorder: creates a run.h5 that follows the contract, then appends rows in SWMR write
// mode, flushing after each append so a reader can follow the run and a killed writer leaves every
// flushed row readable.
class RunWriter
{
public:
    ~RunWriter();
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    // Creates runDirectory (and its checkpoints/ and batches/ folders) and run.h5 in it.
    // Refuses to overwrite an existing run.h5.
    static Result<std::unique_ptr<RunWriter>> create(const std::string& runDirectory, const RunSchema& schema);

    // One row of a table: `values` maps each dataset to its row (1 value for /scalars, L for a
    // matrix table). A dataset left out of the map is written as NaN, which readers take as a
    // measured NaN (the contract has no "missing"): leave one out only when NaN is the truth.
    Status appendRow(const std::string& table, int64_t step, const std::map<std::string, std::vector<float>>& values);
    Status appendScalars(int64_t step, const std::map<std::string, double>& values);
    // Many rows of /scalars or a series table of its own rate at once, in float64.
    Status appendSeries(const std::string& table, const std::vector<int64_t>& steps,
                        const std::map<std::string, std::vector<double>>& values);
    // Many rows at once (row-major [steps.size(), L] per dataset); used by generators and benches.
    Status appendRows(const std::string& table, const std::vector<int64_t>& steps,
                      const std::map<std::string, std::vector<float>>& values);
    Status appendEvent(int64_t step, const std::string& kind, const std::string& message);

    // Appends are flushed as they are written; this is for callers that batch differently.
    Status flush();
    Status close();

    const std::string& directory() const { return m_directory; }
    std::string checkpointPath(int64_t step, const std::string& extension = ".pt") const;
    std::string batchPath(int64_t step) const;

private:
    struct State;
    RunWriter();
    std::unique_ptr<State> m_state;
    std::string m_directory;
};

} // namespace nanscope
