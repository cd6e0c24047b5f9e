#pragma once

// What one foreign log file holds, as its reader found it: scalar series by the name the training
// code logged them under, events, and what could not be read. Every format reader (trainer_state.json,
// metrics.csv, TensorBoard event files, DeepSpeed/Megatron text logs) returns one of these, and
// RunSourceBuilder turns one or several into a run (tables of steps x columns) that the scan, the
// views and the report read like a run.h5. The readers know their format; only the builder knows
// the run model.

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace nanscope {

struct ScalarPoint
{
    int64_t step = 0;
    double value = 0;                                          // NaN and Inf are data
    double wallTime = std::numeric_limits<double>::quiet_NaN(); // seconds since the epoch, when logged
};

struct LoggedEvent
{
    int64_t step = 0;
    std::string kind; // the run format's event kinds: skipped_step, loss_scale_decrease, note, ...
    std::string message;
};

// A histogram record (TensorBoard): kept as its summary, since the views plot ranges, not bins.
struct HistogramPoint
{
    int64_t step = 0;
    double min = 0, max = 0, count = 0, sum = 0, sumSquares = 0;
};

struct ScalarLog
{
    // The file read, as given.
    std::string path;
    // Further files read into this log (the event files of a resumed run); their notes and
    // warnings name their own file.
    std::vector<std::string> alsoRead;
    // Words for the format, shown to users: "Hugging Face Trainer state", "Lightning CSVLogger", ...
    std::string format;
    // By the name as logged ("loss", "train/grad_norm", "learning_rate"), in the order logged.
    // Steps may repeat (a resumed run) or restart (a new epoch); the reader says which in notes
    // and leaves the points as the file has them, except where its format defines the fix.
    std::map<std::string, std::vector<ScalarPoint>> series;
    std::map<std::string, std::vector<HistogramPoint>> histograms;
    std::vector<LoggedEvent> events;
    // Run-level facts (amp_dtype, max_steps, logging_steps, ...), as text.
    std::map<std::string, std::string> attributes;
    // Damage the reader worked around: "FILE: record 12 (byte 3456): CRC-32C mismatch; the 11
    // records before it are shown". Each names the file and the record.
    std::vector<std::string> warnings;
    // What was skipped as not understood or not needed ("2 image summaries skipped").
    std::vector<std::string> notes;

    void add(const std::string& name, int64_t step, double value,
             double wallTime = std::numeric_limits<double>::quiet_NaN())
    {
        series[name].push_back(ScalarPoint{step, value, wallTime});
    }
    bool empty() const { return series.empty() && histograms.empty() && events.empty(); }
};

} // namespace nanscope
