#pragma once

// How two checkpoints of one model differ: per tensor, the relative size of the update
// ||B - A|| / ||A|| and where non-finite values appeared.

#include "core/checkpoint/CheckpointReader.h"

#include <optional>
#include <string>
#include <vector>

namespace nanscope {

struct TensorDiff
{
    std::string name;
    std::vector<int64_t> shapeA, shapeB;
    DType dtypeA = DType::Float32, dtypeB = DType::Float32;
    bool comparable = true; // false when the shapes differ; the figures below are then empty
    double normA = 0, normB = 0; // over finite elements
    double diffNorm = 0;         // ||B - A|| over the elements finite in both
    std::optional<double> relativeUpdate; // diffNorm / normA; empty when normA is 0
    int64_t nonfiniteA = 0, nonfiniteB = 0;
    int64_t becameNonfinite = 0; // finite in A, NaN or Inf in B
    int64_t becameFinite = 0;    // NaN or Inf in A, finite in B
};

struct CheckpointDiff
{
    std::vector<TensorDiff> tensors; // the tensors both hold, in A's order
    std::vector<std::string> onlyInA, onlyInB;
};

CheckpointDiff diffCheckpoints(const Checkpoint& a, const Checkpoint& b);

} // namespace nanscope
