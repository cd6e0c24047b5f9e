#pragma once

#include "core/scan/Incident.h"

#include <QJsonObject>
#include <QJsonValue>

#include <optional>

// The JSON form of an incident, shared by `nanscope scan --json` and the incident report.
namespace nanscope {

QJsonValue number(const std::optional<double>& value);
QJsonObject toJson(const Incident& incident);

} // namespace nanscope
