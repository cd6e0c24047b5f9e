#pragma once

#include <QJsonValue>

#include <optional>

namespace nanscope {

// nanscope's JSON (what --json prints, what the window reads back from its child programs) has no
// NaN or Inf: a figure that does not exist or is not finite is written as null and read back as NaN.
QJsonValue jsonNumber(double value);
QJsonValue jsonNumber(const std::optional<double>& value);
double jsonNumberOrNan(const QJsonValue& value);
// The inverse of jsonNumber(optional): empty for null.
std::optional<double> optionalNumber(const QJsonValue& value);

} // namespace nanscope
