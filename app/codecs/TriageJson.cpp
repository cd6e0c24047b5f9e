#include "app/codecs/TriageJson.h"

#include "app/codecs/JsonNumbers.h"
#include "app/codecs/ReplayJson.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace nanscope {

namespace {
QJsonValue stepOrNull(int64_t step)
{
    return step >= 0 ? QJsonValue(qint64(step)) : QJsonValue();
}
} // namespace

QJsonObject triageToJson(const TriageReport& triage, const QJsonObject& incidentReplay)
{
    const TriageEvidence& e = triage.evidence;
    QJsonArray replays;
    for (size_t i = 0; i < e.replays.size(); ++i) {
        const TriageReplay& r = e.replays[i];
        replays.append(QJsonObject{{"role", text(triageRoleKey(r.role))},
                                   {"checkpoint_step", stepOrNull(r.checkpointStep)},
                                   {"batch_step", stepOrNull(r.batchStep)},
                                   {"checkpoint", triage.checkpoints.value(int(i))},
                                   {"batch", triage.batches.value(int(i))},
                                   {"ran", r.ran},
                                   {"error", text(r.error)},
                                   {"forward_nonfinite", r.forwardNonfinite},
                                   {"backward_nonfinite", r.backwardNonfinite},
                                   {"bad_op", text(r.badOp)},
                                   {"bad_module", text(r.badModule)},
                                   {"loss", r.ran ? jsonNumber(r.loss) : QJsonValue()},
                                   {"blew_up", triageReplayBlewUp(r, e.typicalLoss)},
                                   {"result", text(triageResultText(r, e.typicalLoss))},
                                   {"was_incident", r.wasIncident}});
    }
    QJsonArray details;
    for (const std::string& d : triage.verdict.details)
        details.append(text(d));
    QJsonObject root{{"step", qint64(e.step)},
                     {"typical_loss", jsonNumber(e.typicalLoss)},
                     {"label", text(triageLabelKey(triage.verdict.label))},
                     {"label_text", text(triageLabelName(triage.verdict.label))},
                     {"why", text(triage.verdict.why)},
                     {"details", details},
                     {"replays", replays}};
    if (!incidentReplay.isEmpty())
        root.insert("incident_replay", incidentReplay);
    return root;
}

TriageReport parseTriageJson(const QByteArray& json)
{
    TriageReport triage;
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(json, &error).object();
    const auto label = triageLabelFromKey(root["label"].toString().toStdString());
    if (error.error != QJsonParseError::NoError || !label) {
        triage.error = QObject::tr("the triage printed no valid JSON (%1)").arg(error.errorString());
        return triage;
    }
    triage.evidence.step = root["step"].toInteger(-1);
    triage.evidence.typicalLoss = optionalNumber(root["typical_loss"]);
    triage.verdict.label = *label;
    triage.verdict.why = root["why"].toString().toStdString();
    for (const auto& d : root["details"].toArray())
        triage.verdict.details.push_back(d.toString().toStdString());
    for (const auto& value : root["replays"].toArray()) {
        const QJsonObject o = value.toObject();
        TriageReplay r;
        r.role = triageRoleFromKey(o["role"].toString().toStdString()).value_or(TriageRole::NeighbourBatch);
        r.checkpointStep = o["checkpoint_step"].toInteger(-1);
        r.batchStep = o["batch_step"].toInteger(-1);
        r.ran = o["ran"].toBool();
        r.error = o["error"].toString().toStdString();
        r.forwardNonfinite = o["forward_nonfinite"].toBool();
        r.backwardNonfinite = o["backward_nonfinite"].toBool();
        r.badOp = o["bad_op"].toString().toStdString();
        r.badModule = o["bad_module"].toString().toStdString();
        r.loss = jsonNumberOrNan(o["loss"]);
        r.wasIncident = o["was_incident"].toBool();
        triage.evidence.replays.push_back(r);
        triage.checkpoints << o["checkpoint"].toString();
        triage.batches << o["batch"].toString();
    }
    if (root["incident_replay"].isObject()) {
        ReplayReport replay = parseReplayJson(QJsonDocument(root["incident_replay"].toObject()).toJson(QJsonDocument::Compact));
        if (replay.error.isEmpty())
            triage.incidentReplay = std::move(replay);
    }
    return triage;
}

TriageReport triageReportFrom(const ChildOutcome& outcome, qint64 step)
{
    TriageReport triage = outcome.decodeReport<TriageReport>(QObject::tr("The triage of step %1").arg(step),
                                                             [](const QByteArray& json) { return parseTriageJson(json); });
    if (triage.evidence.step < 0)
        triage.evidence.step = step;
    return triage;
}

} // namespace nanscope
