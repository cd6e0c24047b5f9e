#pragma once

// The per-checkpoint figures readCheckpointSeries gathers while it streams the checkpoints, and
// their assembly into the series' tables once every checkpoint has been read. Internal to the
// checkpoint series (CheckpointSeries.cpp); in a header of its own so the tests can see the rules.

#include "core/importers/CheckpointSeries.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::checkpointtables {

struct ParameterFigures
{
    std::vector<int64_t> shape;
    double norm = 0;
    int64_t nonfinite = 0;
};

struct UpdateFigures
{
    double norm = 0;
    double ratio = 0;
};

// One running statistic (running_mean or running_var) of a module.
struct BufferHalf
{
    double min = 0, max = 0; // over the finite elements; NaN when none is finite
    int64_t nonfinite = 0;
};

// A module's running statistics as they are found; they may lie in different shards.
struct BufferHalves
{
    bool listed = false;
    std::optional<BufferHalf> mean, variance;
};

struct BufferFigures
{
    double meanMin = 0, meanMax = 0, varMin = 0, varMax = 0;
    int64_t nonfinite = 0;
};

struct CheckpointFigures
{
    int64_t step = 0;
    bool inModelOrder = true;
    std::vector<std::string> parameterOrder;
    std::map<std::string, ParameterFigures> parameters;
    std::vector<std::string> bufferOrder;
    std::map<std::string, BufferFigures> buffers;
    // Against the checkpoint read before this one (baseStep); false for the first one read.
    bool hasUpdates = false;
    int64_t baseStep = 0;
    std::map<std::string, UpdateFigures> updates;
};

// The modules that hold both running statistics; `order` keeps only those.
std::map<std::string, BufferFigures> completeBuffers(
    const std::map<std::string, BufferHalves>& halves, std::vector<std::string>& order);

// "layers.2.weight" before "layers.10.weight": digit runs compare as numbers.
bool naturalLess(const std::string& a, const std::string& b);

// Fills the tables of `series` from the rows (ascending steps): columns are the tensors every row
// holds with one shape, in the first row's order (natural name order when that row's files keep
// no model order); notes name what was left out.
void assembleTables(const std::vector<CheckpointFigures>& rows, CheckpointSeries& series);

} // namespace nanscope::checkpointtables
