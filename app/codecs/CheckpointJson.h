#pragma once

// The JSON of `nanscope stats --json` and `nanscope diff --json`, written by the commands and read
// back by the checkpoints pane: the encoder and decoder of each struct side by side, so that
// nothing is dropped or spelled two ways on the way through the child process.

#include "core/checkpoint/CheckpointDiff.h"
#include "core/tensor/TensorStats.h"

#include <QJsonArray>
#include <QJsonObject>

#include <string>
#include <vector>

namespace nanscope {

QJsonArray shapeToJson(const std::vector<int64_t>& shape);
std::vector<int64_t> shapeFromJson(const QJsonValue& value);

// `flags` are healthFlags() as the command judged them (its thresholds); histogram and spectral
// norm only when they were computed.
QJsonObject tensorStatsToJson(const TensorStats& stats, const std::vector<std::string>& flags);
TensorStats tensorStatsFromJson(const QJsonObject& json, std::vector<std::string>* flags = nullptr);

QJsonObject tensorDiffToJson(const TensorDiff& diff);
TensorDiff tensorDiffFromJson(const QJsonObject& json);

} // namespace nanscope
