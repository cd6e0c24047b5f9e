#pragma once

// The JSON of a run comparison (`nanscope compare --json`, the report's .json): one encoder, so
// that every reader sees the same names. NaN and Inf are null (JsonNumbers).

#include "core/compare/RunComparison.h"

#include <QJsonObject>

namespace nanscope {

QJsonObject comparisonToJson(const RunComparison& comparison);

// "only_reference", "only_other", "both".
const char* toString(IncidentPresence presence);

} // namespace nanscope
