#include "app/codecs/JsonNumbers.h"

#include <cmath>

namespace nanscope {

QJsonValue jsonNumber(double value)
{
    return std::isfinite(value) ? QJsonValue(value) : QJsonValue(QJsonValue::Null);
}

QJsonValue jsonNumber(const std::optional<double>& value)
{
    return value ? jsonNumber(*value) : QJsonValue(QJsonValue::Null);
}

double jsonNumberOrNan(const QJsonValue& value)
{
    return value.isDouble() ? value.toDouble() : std::nan("");
}

std::optional<double> optionalNumber(const QJsonValue& value)
{
    return value.isDouble() ? std::optional<double>(value.toDouble()) : std::nullopt;
}

QJsonArray textArray(const std::vector<std::string>& lines)
{
    QJsonArray array;
    for (const std::string& line : lines)
        array.append(text(line));
    return array;
}

std::vector<std::string> textsFromJson(const QJsonValue& value)
{
    std::vector<std::string> lines;
    for (const auto& line : value.toArray())
        lines.push_back(line.toString().toStdString());
    return lines;
}

} // namespace nanscope
