#pragma once

// The JSON of `nanscope triage --json`: written by the triage command, read back by the replay
// pane and the report. Encoder and decoder side by side.

#include "app/children/ChildProgram.h"

#include "widgets/ViewData.h"

#include <QByteArray>
#include <QJsonObject>

namespace nanscope {

// `incidentReplay`: the incident replay's own `nanscope replay --json` object, carried whole. The
// triage's decoded `incidentReplay` is not encoded again (its encoder needs the replay's options):
// a triage parsed and written again drops it.
QJsonObject triageToJson(const TriageReport& triage, const QJsonObject& incidentReplay = {});
// A triage as the pane shows it; `error` says so when the JSON is not a triage's.
TriageReport parseTriageJson(const QByteArray& json);
// What a finished `nanscope triage --json` child of step `step` means for the pane and the report.
TriageReport triageReportFrom(const ChildOutcome& outcome, qint64 step);

} // namespace nanscope
