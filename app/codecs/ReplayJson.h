#pragma once

// The JSON of `nanscope replay --json`: written by the replay command in the child process and
// read back by the replay pane and the report. Encoder and decoder side by side, so that every
// figure written (absmax included) is read, and shapes are written one way.

#include "core/replay/ReplayOptions.h"
#include "widgets/ViewData.h"

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>

namespace nanscope {

// A replayed value, {} when there is none. Its own fields, not `stats --json`'s: dtype as LibTorch
// names it ("Float", "BFloat16"), absmax null when no element is finite, and no norm, zero or
// subnormal count (the replay's views show none of them), so the format reads as it always has.
QJsonObject replayValueToJson(const std::optional<TensorStats>& stats);
QJsonObject replayOpToJson(const ReplayOp& op, bool withInputs);
QJsonObject replayResultToJson(const ReplayResult& result, int64_t step, const ReplayOptions& options);
// The replay as the incident report's JSON summarises it: where the first NaN/Inf came from and
// the backward culprit (op, module, source line, code), the bad samples, the loss convention, the
// log-partition figures and the findings. Beside `replay --json`'s encoder, so that a ReplayResult
// is written to JSON in one file.
QJsonObject replaySummaryToJson(const ReplayResult& result);

std::optional<TensorStats> replayValueFromJson(const QJsonValue& value);
ReplayOp replayOpFromJson(const QJsonObject& op);
// A replay as the pane shows it; `error` says so when the JSON is not a replay's.
ReplayReport parseReplayJson(const QByteArray& json);

} // namespace nanscope
