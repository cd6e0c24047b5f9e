#pragma once

#include <QJsonArray>
#include <QJsonValue>
#include <QString>

#include <string>
#include <vector>

#include <optional>

namespace nanscope {

// nanscope's JSON (what --json prints, what the window reads back from its child programs) has no
// NaN or Inf: a figure that does not exist or is not finite is written as null and read back as NaN.
QJsonValue jsonNumber(double value);
QJsonValue jsonNumber(const std::optional<double>& value);
double jsonNumberOrNan(const QJsonValue& value);
// The inverse of jsonNumber(optional): empty for null.
std::optional<double> optionalNumber(const QJsonValue& value);

// Text across the codecs: core speaks std::string, Qt's JSON QString.
inline QString text(const std::string& s)
{
    return QString::fromStdString(s);
}
QJsonArray textArray(const std::vector<std::string>& lines);
std::vector<std::string> textsFromJson(const QJsonValue& value);

} // namespace nanscope
