#pragma once

// The weights of a training run seen over its checkpoints: one row per checkpoint of per-parameter
// norms and non-finite counts, BatchNorm running statistics, and how far each parameter moved
// since the checkpoint before. Read from the checkpoints other tools write (Hugging Face Trainer
// `checkpoint-N/` folders, PyTorch Lightning `.ckpt` files, plain state_dicts and safetensors) by
// core's safe checkpoint reader: nothing in a file is ever run. RunSourceBuilder turns the tables
// into a run.

#include "core/Progress.h"
#include "core/Result.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nanscope {

// The table names the series suggests to the run builder. kLayers and kBuffers are the run
// format's own; the updates are a table of their own because they start one checkpoint later.
inline constexpr const char* kCheckpointUpdatesTable = "updates";

struct CheckpointSeries
{
    // One row per checkpoint that could be read, ascending. A checkpoint that could not be read
    // has no row (a warning names it); its neighbours are read as usual.
    std::vector<int64_t> steps;

    // The /layers columns: floating-point tensors that are not BatchNorm running statistics
    // (weights, biases, embeddings). Only tensors every read checkpoint holds with the same shape;
    // a note names the others. In the first read checkpoint's order, which is the model's order
    // for pickled state_dicts; safetensors files keep none (they sort tensors by name), so their
    // columns are in natural name order ("layers.2" before "layers.10") and parametersInModelOrder
    // is false.
    std::vector<std::string> parameters;
    std::vector<std::vector<int64_t>> parameterShapes; // parallel to parameters
    bool parametersInModelOrder = true;

    // Row-major [steps x parameters], float32 as the run format stores matrices:
    //   "param_norm"       L2 norm over the finite elements
    //   "param_nonfinite"  NaN + Inf element count
    std::map<std::string, std::vector<float>> layerDatasets;

    // The update table (kCheckpointUpdatesTable), columns = parameters. A row per checkpoint after
    // the first read one, measured against the read checkpoint before it (updateBaseSteps: a
    // checkpoint that could not be read is skipped over, so one row can span two intervals). The
    // first checkpoint has no predecessor and so no row: the run format forbids NaN for "not
    // measured", hence a table of its own rather than a NaN first row of /layers.
    //   "update_norm"   ||w_t - w_prev|| over the elements finite in both
    //   "update_ratio"  update_norm / ||w_prev||; +Inf when a zero tensor moved, 0 when it stayed
    //                   zero, NaN when one side has no finite element at all (the weights were not
    //                   numbers, so neither is their update)
    std::vector<int64_t> updateSteps;
    std::vector<int64_t> updateBaseSteps; // parallel to updateSteps
    std::map<std::string, std::vector<float>> updateDatasets;

    // The /buffers columns: modules holding both running_mean and running_var ("bn1"), and the
    // run format's buffer datasets, row-major [steps x buffers]: running_mean_min/max and
    // running_var_min/max over the finite elements (NaN when none is finite, as the recorder
    // writes them), and "nonfinite", the NaN + Inf count of both buffers.
    std::vector<std::string> buffers;
    std::map<std::string, std::vector<float>> bufferDatasets;

    // Each names the checkpoint file: damage worked around (a checkpoint left out), and what was
    // skipped or guessed (tensors outside a Lightning state_dict, a shard index missing).
    std::vector<std::string> warnings, notes;
};

// The previous checkpoint's parameters are kept in memory up to this many bytes of tensor data.
inline constexpr int64_t kKeepPreviousParameterBytes = int64_t(2) << 30;

// Reads every checkpoint of `checkpoints` (step -> a checkpoint file, or a Hugging Face
// `checkpoint-N` folder) one after the other. Memory: the file being read (one shard at a time when
// a checkpoint is sharded) plus, for the update ratios, the previous checkpoint's parameters and
// the current one's (kept to be the next one's previous) while each fits in
// `keepPreviousParameterBytes`. A larger model keeps none: each current shard reads the previous
// checkpoint's shard holding the same tensors again (twice the reading, a shard's memory). The
// difference itself (CheckpointDiff) widens one tensor pair at a time to double. Progress is
// reported per file; `progress` returning false stops the reading with a "cancelled" error.
// Otherwise fails only when no checkpoint can be read.
Result<CheckpointSeries> readCheckpointSeries(const std::map<int64_t, std::string>& checkpoints,
    const ProgressCallback& progress = {}, int64_t keepPreviousParameterBytes = kKeepPreviousParameterBytes);

} // namespace nanscope
