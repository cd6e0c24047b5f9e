#include "app/codecs/ReplayJson.h"

#include "app/codecs/CheckpointJson.h"
#include "app/codecs/JsonNumbers.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>
#include <utility>

namespace nanscope {

namespace {
// The replay JSON names a dtype as LibTorch prints it, as it did when the replay wrote
// c10::toString(tensor.scalar_type()) itself.
constexpr std::pair<DType, const char*> kLibtorchDtypeNames[] = {
    {DType::Float32, "Float"}, {DType::Float64, "Double"}, {DType::Float16, "Half"},  {DType::BFloat16, "BFloat16"},
    {DType::Int64, "Long"},    {DType::Int32, "Int"},      {DType::Int16, "Short"},   {DType::Int8, "Char"},
    {DType::UInt8, "Byte"},    {DType::Bool, "Bool"}};

QString libtorchDtypeName(DType dtype)
{
    for (const auto& [type, name] : kLibtorchDtypeNames)
        if (type == dtype)
            return name;
    return dtypeName(dtype);
}

DType dtypeFromLibtorchName(const QString& name)
{
    for (const auto& [type, libtorchName] : kLibtorchDtypeNames)
        if (name == libtorchName)
            return type;
    return dtypeFromName(name.toStdString()).value_or(DType::Float32);
}
} // namespace

// ---- written by `nanscope replay --json` ----

QJsonObject replayValueToJson(const std::optional<TensorStats>& s)
{
    if (!s)
        return {};
    return {{"shape", shapeToJson(s->shape)},
            {"dtype", libtorchDtypeName(s->dtype)},
            {"numel", qint64(s->numel)},
            {"min", jsonNumber(s->min)},
            {"max", jsonNumber(s->max)},
            {"mean", jsonNumber(s->mean)},
            {"std", jsonNumber(s->std)},
            {"absmax", s->min ? jsonNumber(s->absmax) : QJsonValue()}, // null, not the kernel's 0, when none is finite
            {"nonzero_absmin", jsonNumber(s->nonzeroAbsmin)},
            {"nan", qint64(s->nan)},
            {"posinf", qint64(s->posinf)},
            {"neginf", qint64(s->neginf)},
            {"inf", qint64(s->inf())}};
}

QJsonObject replayOpToJson(const ReplayOp& op, bool withInputs)
{
    QJsonObject o{{"index", op.index},
                  {"op", text(op.op)},
                  {"module", text(op.module)},
                  {"source", text(op.source)},
                  {"code", text(op.code)},
                  {"output", replayValueToJson(op.output)}};
    if (withInputs) {
        QJsonArray inputs;
        for (const auto& s : op.inputs)
            inputs.append(replayValueToJson(s));
        o["inputs"] = inputs;
    }
    if (op.iteration >= 0)
        o["iteration"] = op.iteration;
    if (!op.fromData)
        o["from_data"] = false;
    if (op.grad)
        o["grad"] = replayValueToJson(op.grad);
    if (!op.gradFunction.empty())
        o["grad_fn"] = text(op.gradFunction);
    if (op.headroom.float16Bits || op.headroom.dynamicRangeBits)
        o["headroom"] = QJsonObject{{"float16_bits", jsonNumber(op.headroom.float16Bits)},
                                    {"bfloat16_bits", jsonNumber(op.headroom.bfloat16Bits)},
                                    {"dynamic_range_bits", jsonNumber(op.headroom.dynamicRangeBits)}};
    if (op.softmax)
        o["softmax"] = QJsonObject{{"input_absmax", jsonNumber(op.softmax->inputAbsmax)},
                                   {"entropy", jsonNumber(op.softmax->entropy)},
                                   {"uniform_entropy", jsonNumber(op.softmax->uniformEntropy)}};
    return o;
}

QJsonObject replaySummaryToJson(const ReplayResult& r)
{
    auto where = [](const ReplayOp& op) {
        return QJsonObject{{"op", text(op.op)}, {"module", text(op.module)}, {"source", text(op.source)}, {"code", text(op.code)}};
    };
    QJsonObject summary;
    summary["first_nonfinite"] = r.firstNonfinite ? QJsonValue(where(*r.firstNonfinite)) : QJsonValue();
    QJsonArray bad;
    for (int64_t i : r.badSamples)
        bad.append(qint64(i));
    summary["bad_samples"] = bad;
    summary["loss_convention"] = lossConventionKey(r.lossConvention);
    if (r.gradCulprit)
        summary["backward_culprit"] = where(*r.gradCulprit);
    if (r.logits) {
        summary["log_z_mean"] = jsonNumber(r.logits->logZMean);
        summary["log_z_max"] = jsonNumber(r.logits->logZMax);
    }
    QJsonArray findings;
    for (const ReplayFinding& f : r.findings)
        findings.append(QJsonObject{{"signal", replaySignalKey(f.signal)}, {"cause", text(f.cause)},
                                    {"suggestion", text(f.suggestion)}});
    summary["findings"] = findings;
    return summary;
}

QJsonObject replayResultToJson(const ReplayResult& r, int64_t step, const ReplayOptions& options)
{
    QJsonArray ops;
    for (const auto& op : r.ops)
        ops.append(replayOpToJson(op, false));
    QJsonArray params;
    for (const auto& p : r.params)
        params.append(QJsonObject{{"name", text(p.name)}, {"value", replayValueToJson(p.value)}, {"grad", replayValueToJson(p.grad)}});
    QJsonObject root{{"step", qint64(step)},
                     {"loss", jsonNumber(r.loss)},
                     {"loss_name", text(r.lossName)},
                     {"loss_convention", lossConventionKey(r.lossConvention)},
                     {"loss_from", text(r.lossFrom)},
                     {"loss_op", r.lossOp ? QJsonValue(replayOpToJson(*r.lossOp, true)) : QJsonValue()},
                     {"checkpoint", text(options.checkpoint)},
                     {"batch", text(options.batch)},
                     {"dtype", text(r.dtype.empty() ? options.dtype : r.dtype)},
                     {"mode", options.eval ? "eval" : "train"},
                     {"forward", QJsonObject{{"first_nonfinite", r.firstNonfinite ? QJsonValue(replayOpToJson(*r.firstNonfinite, true)) : QJsonValue()},
                                             {"ops", ops}}},
                     {"backward", QJsonObject{{"first_nonfinite", r.firstNonfiniteGrad ? QJsonValue(replayOpToJson(*r.firstNonfiniteGrad, true)) : QJsonValue()},
                                              {"culprit", r.gradCulprit ? QJsonValue(replayOpToJson(*r.gradCulprit, true)) : QJsonValue()},
                                              {"params", params}}}};
    if (r.logits)
        root["logits"] = QJsonObject{{"from", text(r.logits->from)},
                                     {"op_index", r.logits->opIndex},
                                     {"rows", qint64(r.logits->rows)},
                                     {"log_z_mean", jsonNumber(r.logits->logZMean)},
                                     {"log_z_min", jsonNumber(r.logits->logZMin)},
                                     {"log_z_max", jsonNumber(r.logits->logZMax)}};
    QJsonArray findings;
    for (const ReplayFinding& f : r.findings)
        findings.append(QJsonObject{{"signal", replaySignalKey(f.signal)},
                                    {"op_index", f.opIndex},
                                    {"cause", text(f.cause)},
                                    {"suggestion", text(f.suggestion)}});
    root["findings"] = findings;
    if (r.bisected) {
        QJsonArray bad;
        for (int64_t i : r.badSamples)
            bad.append(qint64(i));
        root["bad_samples"] = bad;
        root["bad_sample_criterion"] = text(r.badSampleCriterion);
    }
    QJsonArray notes;
    for (const auto& n : r.notes)
        notes.append(text(n));
    root["notes"] = notes;
    return root;
}

// ---- read back by the replay pane and the report ----

std::optional<TensorStats> replayValueFromJson(const QJsonValue& value)
{
    const QJsonObject o = value.toObject();
    if (o.isEmpty())
        return std::nullopt;
    TensorStats v;
    v.shape = shapeFromJson(o["shape"]);
    v.dtype = dtypeFromLibtorchName(o["dtype"].toString());
    v.numel = o["numel"].toInteger();
    v.min = optionalNumber(o["min"]);
    v.max = optionalNumber(o["max"]);
    v.mean = optionalNumber(o["mean"]);
    v.std = optionalNumber(o["std"]);
    v.absmax = o["absmax"].toDouble(0);
    v.nonzeroAbsmin = optionalNumber(o["nonzero_absmin"]);
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
    op.iteration = o.contains("iteration") ? o["iteration"].toInt() : -1;
    op.fromData = o["from_data"].toBool(true);
    op.output = replayValueFromJson(o["output"]);
    op.grad = replayValueFromJson(o["grad"]);
    for (const auto& input : o["inputs"].toArray())
        op.inputs.push_back(replayValueFromJson(input));
    const QJsonObject headroom = o["headroom"].toObject();
    op.headroom.float16Bits = optionalNumber(headroom["float16_bits"]);
    op.headroom.bfloat16Bits = optionalNumber(headroom["bfloat16_bits"]);
    op.headroom.dynamicRangeBits = optionalNumber(headroom["dynamic_range_bits"]);
    if (o["softmax"].isObject()) {
        const QJsonObject softmax = o["softmax"].toObject();
        op.softmax = SoftmaxSignature{softmax["input_absmax"].toDouble(), optionalNumber(softmax["entropy"]),
                                      softmax["uniform_entropy"].toDouble()};
    }
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
    r.lossConvention = lossConventionFromKey(root["loss_convention"].toString().toStdString());
    r.lossFrom = root["loss_from"].toString().toStdString();
    if (root["loss_op"].isObject())
        r.lossOp = replayOpFromJson(root["loss_op"].toObject());
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
    if (backward["culprit"].isObject())
        r.gradCulprit = replayOpFromJson(backward["culprit"].toObject());
    if (root["logits"].isObject()) {
        const QJsonObject logits = root["logits"].toObject();
        r.logits = LogitsSignature{logits["from"].toString().toStdString(), logits["op_index"].toInt(-1),
                                   logits["rows"].toInteger(), optionalNumber(logits["log_z_mean"]),
                                   optionalNumber(logits["log_z_min"]), optionalNumber(logits["log_z_max"])};
    }
    for (const auto& finding : root["findings"].toArray()) {
        const QJsonObject f = finding.toObject();
        if (auto signal = replaySignalFromKey(f["signal"].toString().toStdString()))
            r.findings.push_back({*signal, f["op_index"].toInt(-1), f["cause"].toString().toStdString(),
                                  f["suggestion"].toString().toStdString()});
    }
    for (const auto& p : backward["params"].toArray()) {
        const QJsonObject o = p.toObject();
        r.params.push_back({o["name"].toString().toStdString(), replayValueFromJson(o["value"]), replayValueFromJson(o["grad"])});
    }
    if (root.contains("bad_samples")) {
        r.bisected = true;
        for (const auto& sample : root["bad_samples"].toArray())
            r.badSamples.push_back(sample.toInteger());
        r.badSampleCriterion = root["bad_sample_criterion"].toString().toStdString();
    }
    for (const auto& note : root["notes"].toArray())
        r.notes.push_back(note.toString().toStdString());
    return report;
}

} // namespace nanscope
