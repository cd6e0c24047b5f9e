#include "ReplayJson.h"

#include "CheckpointJson.h"
#include "JsonNumbers.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>

namespace nanscope {

namespace {
QString text(const std::string& s)
{
    return QString::fromStdString(s);
}
} // namespace

// ---- written by `nanscope replay --json` ----

QJsonObject valueStatsToJson(const ValueStats& s)
{
    if (!s.defined())
        return {};
    return {{"shape", shapeToJson(s.shape)},       {"dtype", text(s.dtype)},   {"numel", qint64(s.numel)},
            {"min", jsonNumber(s.min)}, {"max", jsonNumber(s.max)},        {"mean", jsonNumber(s.mean)},
            {"std", jsonNumber(s.std)}, {"absmax", jsonNumber(s.absmax)},  {"nan", qint64(s.nan)},
            {"posinf", qint64(s.posinf)}, {"neginf", qint64(s.neginf)}, {"inf", qint64(s.posinf + s.neginf)}};
}

QJsonObject replayOpToJson(const ReplayOp& op, bool withInputs)
{
    QJsonObject o{{"index", op.index},
                  {"op", text(op.op)},
                  {"module", text(op.module)},
                  {"source", text(op.source)},
                  {"code", text(op.code)},
                  {"output", valueStatsToJson(op.output)}};
    if (withInputs) {
        QJsonArray inputs;
        for (const auto& s : op.inputs)
            inputs.append(valueStatsToJson(s));
        o["inputs"] = inputs;
    }
    if (op.grad.defined())
        o["grad"] = valueStatsToJson(op.grad);
    if (!op.gradFunction.empty())
        o["grad_fn"] = text(op.gradFunction);
    return o;
}

QJsonObject replayResultToJson(const ReplayResult& r, int64_t step, const ReplayOptions& options)
{
    QJsonArray ops;
    for (const auto& op : r.ops)
        ops.append(replayOpToJson(op, false));
    QJsonArray params;
    for (const auto& p : r.params)
        params.append(QJsonObject{{"name", text(p.name)}, {"value", valueStatsToJson(p.value)}, {"grad", valueStatsToJson(p.grad)}});
    QJsonObject root{{"step", qint64(step)},
                     {"loss", jsonNumber(r.loss)},
                     {"loss_name", text(r.lossName)},
                     {"checkpoint", text(options.checkpoint)},
                     {"batch", text(options.batch)},
                     {"dtype", text(options.dtype)},
                     {"mode", options.eval ? "eval" : "train"},
                     {"forward", QJsonObject{{"first_nonfinite", r.firstNonfinite ? QJsonValue(replayOpToJson(*r.firstNonfinite, true)) : QJsonValue()},
                                             {"ops", ops}}},
                     {"backward", QJsonObject{{"first_nonfinite", r.firstNonfiniteGrad ? QJsonValue(replayOpToJson(*r.firstNonfiniteGrad, true)) : QJsonValue()},
                                              {"params", params}}}};
    if (r.bisected) {
        QJsonArray bad;
        for (int64_t i : r.badSamples)
            bad.append(qint64(i));
        root["bad_samples"] = bad;
    }
    QJsonArray notes;
    for (const auto& n : r.notes)
        notes.append(text(n));
    root["notes"] = notes;
    return root;
}

// ---- read back by the replay pane and the report ----

ValueStats valueStatsFromJson(const QJsonValue& value)
{
    ValueStats v;
    const QJsonObject o = value.toObject();
    if (o.isEmpty())
        return v; // no value: defined() is false
    v.shape = shapeFromJson(o["shape"]);
    v.dtype = o["dtype"].toString().toStdString();
    v.numel = o["numel"].toInteger();
    v.min = jsonNumberOrNan(o["min"]);
    v.max = jsonNumberOrNan(o["max"]);
    v.mean = jsonNumberOrNan(o["mean"]);
    v.std = jsonNumberOrNan(o["std"]);
    v.absmax = jsonNumberOrNan(o["absmax"]);
    v.nan = o["nan"].toInteger();
    v.posinf = o["posinf"].toInteger();
    v.neginf = o["neginf"].toInteger();
    return v;
}

ReplayOp replayOpFromJson(const QJsonObject& o)
{
    ReplayOp op;
    op.index = o["index"].toInt();
    op.op = o["op"].toString().toStdString();
    op.module = o["module"].toString().toStdString();
    op.source = o["source"].toString().toStdString();
    op.code = o["code"].toString().toStdString();
    op.gradFunction = o["grad_fn"].toString().toStdString();
    op.output = valueStatsFromJson(o["output"]);
    op.grad = valueStatsFromJson(o["grad"]);
    for (const auto& input : o["inputs"].toArray())
        op.inputs.push_back(valueStatsFromJson(input));
    return op;
}

ReplayReport parseReplayJson(const QByteArray& json)
{
    ReplayReport report;
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(json, &error).object();
    if (error.error != QJsonParseError::NoError || root.isEmpty()) {
        report.error = QObject::tr("the replay printed no valid JSON (%1)").arg(error.errorString());
        return report;
    }
    ReplayResult& r = report.result;
    r.step = root["step"].toInteger(-1);
    r.loss = jsonNumberOrNan(root["loss"]);
    r.lossFinite = std::isfinite(r.loss);
    r.lossName = root["loss_name"].toString().toStdString();
    report.dtype = root["dtype"].toString();
    report.mode = root["mode"].toString();
    const QJsonObject forward = root["forward"].toObject();
    for (const auto& op : forward["ops"].toArray())
        r.ops.push_back(replayOpFromJson(op.toObject()));
    if (forward["first_nonfinite"].isObject())
        r.firstNonfinite = replayOpFromJson(forward["first_nonfinite"].toObject());
    const QJsonObject backward = root["backward"].toObject();
    if (backward["first_nonfinite"].isObject())
        r.firstNonfiniteGrad = replayOpFromJson(backward["first_nonfinite"].toObject());
    for (const auto& p : backward["params"].toArray()) {
        const QJsonObject o = p.toObject();
        r.params.push_back({o["name"].toString().toStdString(), valueStatsFromJson(o["value"]), valueStatsFromJson(o["grad"])});
    }
    if (root.contains("bad_samples")) {
        r.bisected = true;
        for (const auto& sample : root["bad_samples"].toArray())
            r.badSamples.push_back(sample.toInteger());
    }
    for (const auto& note : root["notes"].toArray())
        r.notes.push_back(note.toString().toStdString());
    return report;
}

} // namespace nanscope
