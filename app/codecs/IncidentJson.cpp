#include "app/codecs/IncidentJson.h"

#include "app/cli/CliSupport.h"
#include "app/codecs/JsonNumbers.h"

#include <QJsonArray>

#include <cmath>

namespace nanscope {

using cli::fromStd;

QJsonObject toJson(const Incident& incident)
{
    QJsonArray layers;
    for (const auto& name : incident.layers)
        layers.append(fromStd(name));
    const IncidentEvidence& e = incident.evidence;
    QJsonArray onsets;
    for (const auto& onset : e.layerOnsets)
        onsets.append(QJsonObject{{"name", fromStd(onset.name)},
                                  {"source", fromStd(onset.source)},
                                  {"onset_step", qint64(onset.onsetStep)},
                                  {"magnitude_decades", jsonNumber(onset.magnitudeDecades)},
                                  {"nonfinite", onset.nonfinite}});
    QJsonArray deadAfter;
    for (const auto& name : e.deadAfter)
        deadAfter.append(fromStd(name));
    QJsonObject evidence{{"series", fromStd(e.series)},
                         {"window", QJsonArray{qint64(e.windowBeginStep), qint64(e.windowEndStep)}},
                         {"baseline", jsonNumber(e.baseline)},
                         {"peak", jsonNumber(e.peak)},
                         {"jump_ratio", jsonNumber(e.jumpRatio)},
                         {"growth_decades_per_step", jsonNumber(e.growthDecadesPerStep)},
                         {"count", e.count ? QJsonValue(qint64(*e.count)) : QJsonValue(QJsonValue::Null)},
                         {"layer_onsets", onsets},
                         {"note", fromStd(e.note)},
                         {"spike_score", jsonNumber(e.spikeScore)},
                         {"grad_lead_steps",
                          e.gradLeadSteps ? QJsonValue(qint64(*e.gradLeadSteps)) : QJsonValue(QJsonValue::Null)},
                         {"float16_headroom_decades", jsonNumber(e.float16HeadroomDecades)},
                         {"bfloat16_headroom_decades", jsonNumber(e.bfloat16HeadroomDecades)},
                         {"headroom_of", e.headroomOf.empty() ? QJsonValue(QJsonValue::Null) : fromStd(e.headroomOf)},
                         {"nonfinite_origin", e.nonfiniteOrigin ? QJsonValue(toString(*e.nonfiniteOrigin))
                                                                : QJsonValue(QJsonValue::Null)},
                         {"dead_after", deadAfter},
                         {"loss_plateau_ratio", jsonNumber(e.lossPlateauRatio)},
                         {"grad_norm_level_ratio", jsonNumber(e.gradientLevelRatio)},
                         {"epsilon_dominated_share", jsonNumber(e.epsilonDominatedShare)}};
    QJsonObject object{
        {"kind", toString(incident.kind)},
        {"severity", toString(incident.severity)},
        {"onset_step", qint64(incident.onsetStep)},
        {"nonfinite_step",
         incident.nonfiniteStep ? QJsonValue(qint64(*incident.nonfiniteStep)) : QJsonValue(QJsonValue::Null)},
        {"pattern", incident.pattern ? QJsonValue(toString(*incident.pattern)) : QJsonValue(QJsonValue::Null)},
        {"layers", layers},
        {"cause", fromStd(incident.cause)},
        {"suggestion", fromStd(incident.suggestion)},
        {"evidence", evidence},
    };
    if (incident.rank)
        object["rank"] = *incident.rank;
    return object;
}

} // namespace nanscope
