#include "app/codecs/CompareJson.h"

#include "app/codecs/IncidentJson.h"
#include "app/codecs/JsonNumbers.h"

#include <QJsonArray>

namespace nanscope {

namespace {

QJsonValue optionalStep(const std::optional<int64_t>& step)
{
    return step ? QJsonValue(qint64(*step)) : QJsonValue(QJsonValue::Null);
}

QJsonObject runToJson(const ComparedRun& run)
{
    QJsonArray incidents;
    for (const Incident& incident : run.scan.incidents)
        incidents.append(toJson(incident));
    QJsonArray series;
    for (const auto& [name, values] : run.series)
        series.append(text(name));
    return QJsonObject{{"label", text(run.label)},
                       {"name", text(run.scan.runName)},
                       {"directory", text(run.scan.directory)},
                       {"format", text(run.format)},
                       {"first_step", qint64(run.scan.firstStep)},
                       {"last_step", qint64(run.scan.lastStep)},
                       {"series", series},
                       {"incidents", incidents},
                       {"notes", textArray(run.scan.notes)}};
}

QJsonObject divergenceToJson(const SeriesDivergence& d, size_t reference, size_t other)
{
    QJsonObject object{{"series", text(d.series)},
                       {"first_common_step", qint64(d.firstCommonStep)},
                       {"last_common_step", qint64(d.lastCommonStep)},
                       {"compared_points", qint64(d.comparedPoints)},
                       {"log_scale", d.logScale},
                       {"diverged_at", optionalStep(d.step)}};
    if (d.step) {
        object["leaving_run"] = qint64(d.leavingRun == 0 ? reference : other);
        object["leaving_value"] = jsonNumber(d.leavingValue);
        object["leaving_nonfinite"] = d.leftNonfinite();
        object["band_centre"] = jsonNumber(d.bandCentre);
        object["band_low"] = jsonNumber(d.bandLow);
        object["band_high"] = jsonNumber(d.bandHigh);
    }
    return object;
}

QJsonObject differenceToJson(const IncidentDifference& d)
{
    return QJsonObject{{"presence", toString(d.presence)},
                       {"kind", toString(d.kind)},
                       {"reference_onset", optionalStep(d.reference ? std::optional(d.reference->onsetStep) : std::nullopt)},
                       {"other_onset", optionalStep(d.other ? std::optional(d.other->onsetStep) : std::nullopt)},
                       {"onset_shift", optionalStep(d.onsetShift)},
                       {"differences", textArray(d.differences)},
                       {"reference", d.reference ? QJsonValue(toJson(*d.reference)) : QJsonValue(QJsonValue::Null)},
                       {"other", d.other ? QJsonValue(toJson(*d.other)) : QJsonValue(QJsonValue::Null)}};
}

} // namespace

const char* toString(IncidentPresence presence)
{
    switch (presence) {
    case IncidentPresence::OnlyReference:
        return "only_reference";
    case IncidentPresence::OnlyOther:
        return "only_other";
    case IncidentPresence::Both:
        break;
    }
    return "both";
}

QJsonObject comparisonToJson(const RunComparison& comparison)
{
    QJsonArray runs;
    for (const ComparedRun& run : comparison.runs)
        runs.append(runToJson(run));
    QJsonArray pairs;
    for (const RunPairComparison& pair : comparison.pairs) {
        QJsonArray series;
        for (const SeriesDivergence& d : pair.series)
            series.append(divergenceToJson(d, 0, pair.otherRun));
        QJsonArray incidents;
        for (const IncidentDifference& d : pair.incidents)
            incidents.append(differenceToJson(d));
        const SeriesDivergence* first = pair.firstDivergence();
        pairs.append(QJsonObject{
            {"reference", 0},
            {"other", qint64(pair.otherRun)},
            {"first_divergence", first ? QJsonValue(QJsonObject{{"series", text(first->series)}, {"step", qint64(*first->step)}})
                                       : QJsonValue(QJsonValue::Null)},
            {"series", series},
            {"only_in_reference", textArray(pair.onlyInReference)},
            {"only_in_other", textArray(pair.onlyInOther)},
            {"incidents", incidents},
            {"notes", textArray(pair.notes)}});
    }
    const DivergenceConfig& c = comparison.config;
    const QJsonObject settings{{"window_rows", c.windowRows},
                               {"band_sigmas", c.bandSigmas},
                               {"persist_points", c.persistPoints},
                               {"minimum_relative_band", c.minimumRelativeBand}};
    return QJsonObject{{"runs", runs}, {"comparisons", pairs}, {"settings", settings}};
}

} // namespace nanscope
